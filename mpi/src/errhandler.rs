//! User error handlers (MPI 4.1 §9.3): the table of those a program made,
//! and its rules. A handler serves one kind of object and may be set only
//! on that kind; the program holds one handle from its creation and one
//! more from each `MPI_*_get_errhandler` that returns it, each to be freed;
//! once all are freed it can no longer be set, but stays in force where it
//! is (§9.3.4). What a handler is (`F`: a C function, a closure) and the
//! handle values are the caller's.

use std::collections::HashMap;

/// The kind of object a handler serves (§9.3.1-9.3.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectKind {
    /// A communicator's.
    Comm,
    /// A window's.
    Win,
    /// A file's.
    File,
    /// A session's.
    Session,
}

impl ObjectKind {
    /// What the kind is called in a message.
    pub fn name(self) -> &'static str {
        match self {
            ObjectKind::Comm => "communicator",
            ObjectKind::Win => "window",
            ObjectKind::File => "file",
            ObjectKind::Session => "session",
        }
    }
}

/// Why a user handler cannot serve (`MPI_ERR_ERRHANDLER`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ErrhandlerError {
    /// Every handle of it was freed: it cannot be set any more.
    #[error("error handler {handle:#x} was freed")]
    Freed {
        /// The handle.
        handle: usize,
    },
    /// It was made for another kind of object.
    #[error("error handler {handle:#x} was made for a {}, not a {}", made.name(), want.name())]
    WrongKind {
        /// The handle.
        handle: usize,
        /// The kind it serves.
        made: ObjectKind,
        /// The kind of object it was to be set on.
        want: ObjectKind,
    },
    /// No handler has this handle.
    #[error("{handle:#x} is not an error handler")]
    Unknown {
        /// The handle.
        handle: usize,
    },
}

struct Entry<F> {
    kind: ObjectKind,
    func: F,
    /// The handles the program holds.
    refs: u32,
}

/// The user handlers a process made, by handle.
pub struct Handlers<F> {
    table: HashMap<usize, Entry<F>>,
    made: usize,
}

impl<F> Default for Handlers<F> {
    fn default() -> Self {
        Handlers { table: HashMap::new(), made: 0 }
    }
}

impl<F: Copy> Handlers<F> {
    /// Register `func` for objects of `kind` under the handle `handle_of`
    /// makes from the number of handlers made before it (handles are never
    /// reused); the program holds that one handle.
    pub fn create(&mut self, kind: ObjectKind, func: F, handle_of: impl FnOnce(usize) -> usize) -> usize {
        let h = handle_of(self.made);
        self.made += 1;
        self.table.insert(h, Entry { kind, func, refs: 1 });
        h
    }

    /// Whether handler `h` may be set on an object of `kind`.
    pub fn check(&self, handle: usize, kind: ObjectKind) -> Result<(), ErrhandlerError> {
        match self.table.get(&handle) {
            Some(e) if e.refs == 0 => Err(ErrhandlerError::Freed { handle }),
            Some(e) if e.kind != kind => Err(ErrhandlerError::WrongKind { handle, made: e.kind, want: kind }),
            Some(_) => Ok(()),
            None => Err(ErrhandlerError::Unknown { handle }),
        }
    }

    /// `handle` was handed out once more (`MPI_*_get_errhandler`).
    pub fn handed_out(&mut self, handle: usize) {
        if let Some(e) = self.table.get_mut(&handle) {
            e.refs = e.refs.saturating_add(1);
        }
    }

    /// The program freed one of its handles of it (`MPI_Errhandler_free`).
    pub fn free(&mut self, handle: usize) -> Result<(), ErrhandlerError> {
        match self.table.get_mut(&handle) {
            Some(e) if e.refs > 0 => {
                e.refs -= 1;
                Ok(())
            }
            _ => Err(ErrhandlerError::Unknown { handle }),
        }
    }

    /// The function of handler `handle`, freed or not (it stays in force
    /// where it is set).
    pub fn func(&self, handle: usize) -> Option<F> {
        self.table.get(&handle).map(|e| e.func)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Made for one kind, set only on it; each handle handed out must be
    /// freed before it can no longer be set; its function stays.
    #[test]
    fn a_handler_serves_its_kind_until_every_handle_is_freed() {
        let mut t: Handlers<u8> = Handlers::default();
        let h = t.create(ObjectKind::Win, 7, |k| 0x100 + k);
        assert_eq!(h, 0x100);
        assert_eq!(t.check(h, ObjectKind::Win), Ok(()));
        let wrong = ErrhandlerError::WrongKind { handle: h, made: ObjectKind::Win, want: ObjectKind::Comm };
        assert_eq!(t.check(h, ObjectKind::Comm), Err(wrong));
        t.handed_out(h);
        assert_eq!(t.free(h), Ok(()));
        assert_eq!(t.check(h, ObjectKind::Win), Ok(()));
        assert_eq!(t.free(h), Ok(()));
        assert_eq!(t.check(h, ObjectKind::Win), Err(ErrhandlerError::Freed { handle: h }));
        assert_eq!(t.free(h), Err(ErrhandlerError::Unknown { handle: h }));
        assert_eq!(t.func(h), Some(7));
        assert_eq!(t.create(ObjectKind::Comm, 8, |k| 0x100 + k), 0x101);
        assert_eq!(t.check(0x999, ObjectKind::Comm), Err(ErrhandlerError::Unknown { handle: 0x999 }));
    }
}
