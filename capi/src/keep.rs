//! What a persistent collective keeps of its arguments (MPI 4.1 §6.13):
//! the buffers are the caller's for the request's life, but the arrays of
//! counts, displacements and datatypes are copied at initialization, as
//! the implementations programs are written against do (mpi4py frees its
//! count arrays once `MPI_Allgatherv_init` returns).
//!
//! Only the arrays significant on this process are read — those of a
//! rooted v-collective at its root, the send side not under
//! `MPI_IN_PLACE` — each of the length the communicator gives it: its
//! size, or for a neighborhood collective the degree of its side. The
//! others are kept as the pointers they were, and never read.

use std::ffi::{c_int, c_void};

use crate::abi::MPI_IN_PLACE;
use crate::*;

/// What the initialization call says about where arrays are significant.
pub(crate) struct Ctx {
    rank: c_int,
    /// Lengths of the send-side and receive-side arrays.
    n_send: usize,
    n_recv: usize,
    root: Option<c_int>,
    send_in_place: bool,
    names: Vec<&'static str>,
}

impl Ctx {
    /// The context of a collective on `comm` (a neighborhood one's arrays
    /// have one entry per edge of their side).
    pub(crate) fn new(st: &State, comm: Handle, neighborhood: bool) -> R<Ctx> {
        let c = &st.comm(comm)?.comm;
        let (n_send, n_recv) = if neighborhood {
            let (incoming, outgoing) = c.neighbor_edges()?;
            (outgoing.len(), incoming.len())
        } else {
            (c.size() as usize, c.size() as usize)
        };
        Ok(Ctx { rank: c.rank(), n_send, n_recv, root: None, send_in_place: false, names: Vec::new() })
    }

    /// How many entries array argument `name` has here, or `None` where
    /// it is not significant.
    fn len(&self, name: &str) -> Option<usize> {
        if self.root.is_some_and(|r| r != self.rank) {
            return None;
        }
        let send = name.starts_with("send")
            || name.starts_with("sdispl")
            || (name == "displs" && !self.names.contains(&"recvcounts"));
        match send {
            true if self.send_in_place => None,
            true => Some(self.n_send),
            false => Some(self.n_recv),
        }
    }
}

/// An argument's part in deciding what is significant: its name is
/// recorded; `root` and `sendbuf` also say what they hold.
pub(crate) trait Note {
    fn note(&self, name: &'static str, ctx: &mut Ctx) {
        ctx.names.push(name);
    }
}

impl Note for c_int {
    fn note(&self, name: &'static str, ctx: &mut Ctx) {
        if name == "root" {
            ctx.root = Some(*self);
        }
        ctx.names.push(name);
    }
}

impl Note for *const c_void {
    fn note(&self, name: &'static str, ctx: &mut Ctx) {
        if name == "sendbuf" && *self as usize == MPI_IN_PLACE {
            ctx.send_in_place = true;
        }
        ctx.names.push(name);
    }
}

impl Note for i64 {}
impl Note for Handle {}
impl Note for *mut c_void {}

/// An argument as the request keeps it.
pub(crate) trait Keep: Sized {
    type Kept: Kept<Arg = Self>;
    /// # Safety
    /// A significant array argument holds the entries `ctx` says.
    unsafe fn keep(self, name: &str, ctx: &Ctx) -> R<Self::Kept>;
}

/// A kept argument, handed to each start as the original type.
pub(crate) trait Kept: 'static {
    type Arg;
    fn arg(&self) -> Self::Arg;
}

/// A value kept as it is.
pub(crate) struct Same<T>(T);

impl<T: Copy + 'static> Kept for Same<T> {
    type Arg = T;
    fn arg(&self) -> T {
        self.0
    }
}

macro_rules! as_is {
    ($($t:ty),*) => {$(
        impl Keep for $t {
            type Kept = Same<$t>;
            unsafe fn keep(self, _: &str, _: &Ctx) -> R<Same<$t>> {
                Ok(Same(self))
            }
        }
    )*};
}
as_is!(c_int, i64, Handle, *mut c_void, *const c_void);

/// An array argument: a copy of its entries where significant, else the
/// pointer as given (never read).
pub(crate) struct Array<T> {
    given: *const T,
    copy: Option<Vec<T>>,
}

impl<T: Copy + 'static> Kept for Array<T> {
    type Arg = *const T;
    fn arg(&self) -> *const T {
        self.copy.as_ref().map_or(self.given, |v| v.as_ptr())
    }
}

macro_rules! arrays {
    ($($t:ty),*) => {$(
        impl Note for *const $t {}

        impl Keep for *const $t {
            type Kept = Array<$t>;
            unsafe fn keep(self, name: &str, ctx: &Ctx) -> R<Array<$t>> {
                let copy = match ctx.len(name) {
                    Some(n) if !self.is_null() => {
                        // SAFETY: `self` is not null (matched above) and, as an array significant here, holds the `n`
                        // entries `ctx` gives it (one per process or neighbour), readable for this call (`keep`'s
                        // `# Safety`, from the initialization call's caller, MPI 4.1 §6.13); the entries are copied at
                        // once.
                        Some(unsafe { std::slice::from_raw_parts(self, n) }.to_vec())
                    }
                    _ => None,
                };
                Ok(Array { given: self, copy })
            }
        }
    )*};
}
arrays!(c_int, i64, isize, Handle);

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(rank: c_int, root: Option<c_int>, in_place: bool, names: &[&'static str]) -> Ctx {
        Ctx { rank, n_send: 3, n_recv: 2, root, send_in_place: in_place, names: names.to_vec() }
    }

    #[test]
    fn only_significant_arrays_are_read_at_their_length() {
        // Gatherv: the receive arrays at the root only.
        let g = ["sendbuf", "recvcounts", "displs", "root"];
        assert_eq!(ctx(0, Some(0), false, &g).len("recvcounts"), Some(2));
        assert_eq!(ctx(0, Some(0), false, &g).len("displs"), Some(2));
        assert_eq!(ctx(1, Some(0), false, &g).len("recvcounts"), None);
        // Scatterv: `displs` goes with the send counts.
        let s = ["sendbuf", "sendcounts", "displs", "root"];
        assert_eq!(ctx(0, Some(0), false, &s).len("displs"), Some(3));
        // Alltoallv under MPI_IN_PLACE: the send side is ignored.
        let a = ["sendbuf", "sendcounts", "sdispls", "recvcounts", "rdispls"];
        assert_eq!(ctx(1, None, true, &a).len("sdispls"), None);
        assert_eq!(ctx(1, None, true, &a).len("rdispls"), Some(2));
    }

    #[test]
    fn a_kept_array_outlives_the_callers() {
        let c = ctx(0, None, false, &["recvcounts"]);
        let kept = {
            let counts: Vec<c_int> = vec![4, 5];
            // SAFETY: `counts` holds the 2 entries the context asks for.
            unsafe { counts.as_ptr().keep("recvcounts", &c) }.ok()
        };
        let kept = kept.map(|k| k.copy.clone());
        assert_eq!(kept, Some(Some(vec![4, 5])));
    }
}
