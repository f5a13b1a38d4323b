//! Buffered mode (MPI 4.1 §3.6): a buffered send completes at once, with
//! the message copied out of the caller's buffer, within the space the
//! program attached (to a communicator or to the process, the caller's
//! choice of [`Buffered`]); [`Space::Automatic`] lets the library take
//! what it needs.
//!
//! The copy lives in the library (the engine sends from it), not in the
//! attached bytes; the attached size is enforced as the standard's
//! accounting does — each pending message takes its size plus
//! [`OVERHEAD`] — so that a program that would overflow its buffer under
//! another MPI gets [`MpiError::Buffer`] (`MPI_ERR_BUFFER`) here too.

use crate::comm::{Process, Status};
use crate::error::BufferError;
use crate::slot::Slot;
use crate::staged::{outgoing, Span, Staged};
use crate::{Result, Tag};

/// What a program attached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    /// Its bytes: their address and size (only accounted for, and handed
    /// back at detach).
    Buffer(*mut u8, usize),
    /// `MPI_BUFFER_AUTOMATIC`: no limit.
    Automatic,
}

/// Bytes each buffered message takes beyond its data (`MPI_BSEND_OVERHEAD`).
pub const OVERHEAD: usize = 512;

/// A buffered send in flight, as [`Buffered::send`] numbers it: the
/// handle to cancel it by ([`Buffered::cancel`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sent(u64);

/// An attached buffer and the buffered sends not yet complete.
#[derive(Default)]
pub struct Buffered {
    attached: Option<Space>,
    /// Each send in flight: its operation, its size, its number.
    pending: Vec<(Staged, usize, Sent)>,
    next: u64,
}

impl Buffered {
    /// Whether a buffer is attached.
    pub fn is_attached(&self) -> bool {
        self.attached.is_some()
    }

    /// Forget the buffered sends that have completed.
    fn reap(&mut self) -> Result<()> {
        let mut left = Vec::new();
        for (a, n, id) in self.pending.drain(..) {
            if let Err(a) = a.test()? {
                left.push((a, n, id));
            }
        }
        self.pending = left;
        Ok(())
    }

    /// Attach `space` (`MPI_Buffer_attach`, `MPI_Comm_attach_buffer`):
    /// refused when one is attached already.
    pub fn attach(&mut self, space: Space) -> Result<()> {
        if self.attached.is_some() {
            return Err(BufferError::AlreadyAttached.into());
        }
        if let Space::Buffer(b, n) = space {
            if n > 0 && b.is_null() {
                return Err(BufferError::NullAttached { bytes: n }.into());
            }
        }
        self.attached = Some(space);
        Ok(())
    }

    /// Wait for every buffered message to go (§3.6.1).
    pub fn flush(&mut self) -> Result<()> {
        for (a, _, _) in self.pending.drain(..) {
            a.wait()?;
        }
        Ok(())
    }

    /// Detach after flushing: what was attached.
    pub fn detach(&mut self) -> Result<Space> {
        let Some(space) = self.attached else {
            return Err(BufferError::NoneAttached.into());
        };
        self.flush()?;
        self.attached = None;
        Ok(space)
    }

    /// One request over the buffered messages in flight, complete when
    /// they all are (`MPI_Buffer_iflush`, MPI 4.1).
    pub fn iflush<P>(&mut self) -> Slot<P> {
        let mut all: Vec<Staged> = self.pending.drain(..).map(|p| p.0).collect();
        match all.pop() {
            None => Slot::Done(Ok(Status::empty())),
            Some(mut last) => {
                last.stage.with.extend(all);
                last.stage.status = Some(Status::empty());
                Slot::Op(last)
            }
        }
    }

    /// Send `span` of `buf` to `to` from a copy, within the attached
    /// buffer's space: `MPI_Bsend`, `MPI_Ibsend` and each start of
    /// `MPI_Bsend_init`. The number it returns lets [`Buffered::cancel`]
    /// withdraw the message.
    ///
    /// # Safety
    /// Every block of the span's elements at `buf` is readable, and not modified, for the
    /// duration of the call.
    pub unsafe fn send(&mut self, to: &Process<'_>, buf: *const u8, span: &Span, tag: Tag) -> Result<Sent> {
        let size = match self.attached {
            None => return Err(BufferError::NeedsAttached.into()),
            Some(Space::Automatic) => usize::MAX,
            Some(Space::Buffer(_, n)) => n,
        };
        self.reap()?;
        let used: usize = self.pending.iter().map(|p| p.1 + OVERHEAD).sum();
        if used.saturating_add(span.len() + OVERHEAD) > size {
            return Err(BufferError::Full {
                size,
                free: size.saturating_sub(used),
                need: span.len() + OVERHEAD,
                len: span.len(),
            }
            .into());
        }
        // SAFETY: the span's elements at `buf` are readable and unmodified for this call (`# Safety`),
        // and `into_owned` copies them before it returns: the send goes from the copy.
        let data = unsafe { outgoing(buf, span, "send")? }.into_owned();
        let n = data.len();
        let a = crate::staged::isend_owned(to, data, tag, false)?;
        let id = Sent(self.next);
        self.next += 1;
        self.pending.push((a, n, id));
        Ok(id)
    }

    /// Cancel buffered send `id` (`MPI_Cancel` of an `MPI_Ibsend`'s or a
    /// started `MPI_Bsend_init`'s request, §3.8.4): if it is still in
    /// flight, ask the receiver to withdraw it and hand back the operation,
    /// which completes as cancelled if the message was not yet matched;
    /// the request the program holds then waits for it. Its space in the
    /// buffer is free from now on. `None`: it went already, or was never
    /// this buffer's.
    pub fn cancel(&mut self, id: Sent) -> Result<Option<Staged>> {
        let Some(i) = self.pending.iter().position(|p| p.2 == id) else { return Ok(None) };
        let (a, _, _) = self.pending.remove(i);
        a.request.cancel()?;
        Ok(Some(a))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MpiError;

    /// `MPI_Buffer_attach`/`detach` out of order say what went wrong, with
    /// the figures, and a refused attach leaves the buffer as it was.
    #[test]
    fn attach_and_detach_errors_carry_what_went_wrong() {
        let mut b = Buffered::default();
        assert!(matches!(b.detach(), Err(MpiError::Buffer(BufferError::NoneAttached))));
        let e = b.attach(Space::Buffer(std::ptr::null_mut(), 64)).unwrap_err();
        assert_eq!(e, MpiError::Buffer(BufferError::NullAttached { bytes: 64 }));
        assert!(!b.is_attached());
        b.attach(Space::Automatic).unwrap();
        assert!(matches!(b.attach(Space::Automatic), Err(MpiError::Buffer(BufferError::AlreadyAttached))));
        assert!(matches!(b.detach(), Ok(Space::Automatic)));
        let full = BufferError::Full { size: 1000, free: 488, need: 612, len: 100 };
        assert_eq!(
            full.to_string(),
            "the attached buffer of 1000 bytes has 488 free, and this message needs 612 (100 + MPI_BSEND_OVERHEAD)"
        );
    }
}
