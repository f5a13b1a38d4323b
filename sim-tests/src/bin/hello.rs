use mpi::traits::*;

fn main() -> mpi::Result<()> {
    let universe = mpi::initialize()?;
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    let next = (rank + 1) % size;
    let prev = (rank + size - 1) % size;
    if rank == 0 {
        world.process_at_rank(next).send(&rank)?;
        let (v, st) = world.process_at_rank(prev).receive::<i32>()?;
        println!("ring of {size} closed: got {v} from {}", st.source_rank());
    } else {
        let (v, _) = world.process_at_rank(prev).receive::<i32>()?;
        world.process_at_rank(next).send(&(v + rank))?;
    }
    println!("rank {rank} done at {:.3} us", universe.wtime() * 1e6);
    Ok(())
}
