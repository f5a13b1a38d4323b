//! Attribute caching from Rust (MPI 4.1 §7.7.2, `mpi::attr`): values on a
//! communicator, what its duplicates (blocking and non-blocking) get, and
//! the values going with the communicator.

use std::cell::Cell;
use std::rc::Rc;

use mpi::attr::{Keyval, OnDuplicate};
use mpi::traits::*;
use mpi::SimpleCommunicator;

use crate::{e, R};

/// A value that counts its live copies.
#[derive(Debug)]
struct Counted(u32, Rc<Cell<i32>>);

impl Clone for Counted {
    fn clone(&self) -> Counted {
        self.1.set(self.1.get() + 1);
        Counted(self.0, self.1.clone())
    }
}

impl Counted {
    fn new(v: u32, live: &Rc<Cell<i32>>) -> Counted {
        live.set(live.get() + 1);
        Counted(v, live.clone())
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.1.set(self.1.get() - 1);
    }
}

pub fn attrs(w: &SimpleCommunicator) -> R {
    let me = w.rank() as u32;
    let live = Rc::new(Cell::new(0));
    let copied: Keyval<Counted> = Keyval::new(OnDuplicate::Clone);
    let kept: Keyval<String> = Keyval::new(OnDuplicate::Drop);
    {
        let c = w.duplicate().map_err(e)?;
        check!(c.attr(&copied).is_none(), "nothing cached yet");
        check!(c.set_attr(&copied, Counted::new(me, &live)).is_none(), "a first value replaces nothing");
        c.set_attr(&kept, format!("rank {me}"));
        let got = c.attr(&copied).ok_or("the value is cached")?;
        check!(got.0 == me && live.get() == 2, "a clone of the value: {got:?}, {} live", live.get());
        drop(got);
        // The duplicates get a clone of the copied value, not the other.
        let d = c.duplicate().map_err(e)?;
        check!(d.attr(&copied).map(|v| v.0) == Some(me), "the blocking duplicate's copy");
        check!(d.attr(&kept).is_none() && c.attr(&kept).as_deref() == Some(&*format!("rank {me}")), "kept stays");
        let i = c.immediate_duplicate().map_err(e)?.wait().map_err(e)?;
        check!(i.attr(&copied).map(|v| v.0) == Some(me), "the non-blocking duplicate's copy");
        check!(live.get() == 3, "three communicators hold a value: {} live", live.get());
        // A value set on the duplicate is its own.
        d.set_attr(&copied, Counted::new(me + 100, &live));
        check!(c.attr(&copied).map(|v| v.0) == Some(me), "the original keeps its value");
        check!(d.delete_attr(&copied).map(|v| v.0) == Some(me + 100), "the duplicate's value deleted");
        check!(d.attr(&copied).is_none(), "and gone");
        drop(d);
        drop(i);
        check!(live.get() == 1, "the duplicates' values went with them: {} live", live.get());
    }
    check!(live.get() == 0, "the communicator's value went with it: {} live", live.get());
    w.barrier().map_err(e)?;
    Ok(())
}
