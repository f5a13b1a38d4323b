//! The README's Rust program, as it is there (sim-tests/tests/readme.rs
//! checks the two are the same and runs it).

use mpi::traits::*;

fn main() -> mpi::Result<()> {
    let universe = mpi::initialize()?;
    let world = universe.world();
    if world.rank() == 0 {
        world.process_at_rank(1).send(&[1.0f64, 2.0, 3.0][..])?;
    } else if world.rank() == 1 {
        let (v, status) = world.process_at_rank(0).receive_vec::<f64>()?;
        println!("got {v:?} from rank {}", status.source_rank());
    }
    universe.finalize()
}
