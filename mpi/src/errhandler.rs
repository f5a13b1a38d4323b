//! User error handlers (MPI 4.1 §9.3): the table of those a program made,
//! and its rules. A handler serves one kind of object and may be set only
//! on that kind; the program holds one handle from its creation and one
//! more from each `MPI_*_get_errhandler` that returns it, each to be freed;
//! once all are freed it can no longer be set, but stays in force where it
//! is (§9.3.4). What a handler is (`F`: a C function, a closure) and the
//! handle values are the caller's.
//!
//! What a failed call does is here too ([`raise`]): it returns its code
//! under `MPI_ERRORS_RETURN`, runs the program's handler and then returns
//! the code, or ends the job under `MPI_ERRORS_ARE_FATAL` and
//! `MPI_ERRORS_ABORT` (§9.3). The caller supplies the handler in force on
//! the object the call was about, and runs what [`Outcome`] says.

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

/// The handler in force on the object a failed call was about (§9.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InForce<F> {
    /// `MPI_ERRORS_RETURN`: the call returns the error's code.
    Return,
    /// `MPI_ERRORS_ARE_FATAL` or `MPI_ERRORS_ABORT`: the job ends.
    Fatal,
    /// A program's handler: it runs, then the call returns the code.
    User(F),
}

/// A program's error handler, as [`raise`] runs it: with the handle of the
/// object the failed call was about and the error's code, both of which it
/// may change in its own copies (§9.3: the call returns the code it had).
pub trait UserHandler {
    /// Run the handler.
    fn run(&self, object: &mut usize, code: &mut i32);
}

/// What a failed call does once its handler has been applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The call returns this code.
    Returns(i32),
    /// The job ends: the process prints `message` and exits with `exit`
    /// (the launcher then stops the other ranks and names this one).
    EndsJob {
        /// What went wrong, where: one line for the program's standard error.
        message: String,
        /// The exit status: the error class, in 1..=125.
        exit: i32,
    },
}

/// A failed call, as MPI 4.1 §9.3 gives its outcome: `call` failed on
/// `object` with error class `class` (`why` says how), on `rank` of the
/// world if known; `handler` is the handler in force on the object.
pub fn raise<F: UserHandler>(
    handler: InForce<F>,
    call: &str,
    object: usize,
    class: i32,
    why: &str,
    rank: Option<i32>,
) -> Outcome {
    match handler {
        InForce::Return => Outcome::Returns(class),
        InForce::User(f) => {
            let (mut object, mut code) = (object, class);
            f.run(&mut object, &mut code);
            Outcome::Returns(class)
        }
        InForce::Fatal => {
            let on = rank.map_or_else(String::new, |r| format!(" on rank {r}"));
            Outcome::EndsJob {
                message: format!("MPI error{on} in {call}: {why} (error class {class})"),
                exit: if class <= 0 { 1 } else { class.min(125) },
            }
        }
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

    /// A handler that records what it was given and changes both.
    struct Records(std::cell::RefCell<Vec<(usize, i32)>>);

    impl UserHandler for &Records {
        fn run(&self, object: &mut usize, code: &mut i32) {
            self.0.borrow_mut().push((*object, *code));
            *object = 0;
            *code = 99;
        }
    }

    /// §9.3: errors return under MPI_ERRORS_RETURN; a user's handler runs
    /// once with the object and code, and the call returns the code it
    /// had; a fatal handler ends the job with the class as exit status.
    #[test]
    fn a_failed_call_meets_the_handler_in_force() {
        let r = Records(Default::default());
        assert_eq!(raise::<&Records>(InForce::Return, "MPI_Send", 5, 6, "bad rank", Some(1)), Outcome::Returns(6));
        assert!(r.0.borrow().is_empty());
        assert_eq!(raise(InForce::User(&r), "MPI_Send", 5, 6, "bad rank", Some(1)), Outcome::Returns(6));
        assert_eq!(*r.0.borrow(), vec![(5, 6)]);
        let Outcome::EndsJob { message, exit } =
            raise::<&Records>(InForce::Fatal, "MPI_Send", 5, 6, "bad rank", Some(1))
        else {
            panic!("a fatal handler let the call return")
        };
        assert_eq!((message.as_str(), exit), ("MPI error on rank 1 in MPI_Send: bad rank (error class 6)", 6));
        let end = |class| match raise::<&Records>(InForce::Fatal, "MPI_Init", 0, class, "x", None) {
            Outcome::EndsJob { message, exit } => (message.contains(" on rank"), exit),
            o => panic!("{o:?}"),
        };
        assert_eq!(end(0), (false, 1), "class 0 would exit with success");
        assert_eq!(end(300), (false, 125), "an exit status above 125 means a signal to the shell");
    }
}
