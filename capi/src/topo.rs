//! Process topologies (MPI 4.1 chapter 8): Cartesian grids (§8.5.1),
//! graphs (§8.5.3) and distributed graphs (§8.5.4) on communicators, their
//! queries (§8.5.5, §8.5.6) and `MPI_Dims_create` (§8.5.2). The topology
//! itself lives with the communicator in the mpi crate
//! ([`mpi::topo`]); the neighborhood collectives are in `neighbor.rs`.
//!
//! Ranks are never reordered (`reorder` is a hint the standard lets a
//! library ignore), so `MPI_Cart_map` and `MPI_Graph_map` give each process
//! its own rank, or `MPI_UNDEFINED` beyond the topology's size.

use std::ffi::c_int;

use mpi::topo::{Cartesian, DistGraph, Graph, Topology};
use mpi::Communicator;

use crate::abi::*;
use crate::arrays::ndims_arg;
use crate::comm_table::register;
use crate::*;

/// `comm`'s topology, if it has one.
fn topology(st: &State, comm: Handle) -> R<Option<&Topology>> {
    Ok(st.comm(comm)?.comm.topology())
}

fn no_topology(call: &str, want: &str) -> Fail {
    Fail::new(MPI_ERR_TOPOLOGY, format!("{call} needs a communicator with a {want} topology"))
}

fn cart<'a>(st: &'a State, comm: Handle, call: &str) -> R<&'a Cartesian> {
    match topology(st, comm)? {
        Some(Topology::Cartesian(c)) => Ok(c),
        _ => Err(no_topology(call, "Cartesian")),
    }
}

fn graph<'a>(st: &'a State, comm: Handle, call: &str) -> R<&'a Graph> {
    match topology(st, comm)? {
        Some(Topology::Graph(g)) => Ok(g),
        _ => Err(no_topology(call, "graph")),
    }
}

fn dist_graph<'a>(st: &'a State, comm: Handle, call: &str) -> R<&'a DistGraph> {
    match topology(st, comm)? {
        Some(Topology::DistGraph(g)) => Ok(g),
        _ => Err(no_topology(call, "distributed graph")),
    }
}

/// Write `values` into the first entries of the caller's array of `max`.
///
/// # Safety
/// `out` is null or holds `max` values.
unsafe fn put_array<T: Copy>(out: *mut T, max: c_int, values: &[T], what: &str) -> R<()> {
    let max = usize::try_from(max).map_err(|_| Fail::new(MPI_ERR_ARG, format!("max{what} {max} is negative")))?;
    let n = values.len().min(max);
    if n > 0 && out.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, format!("{what} is a null pointer")));
    }
    for (i, v) in values.iter().take(n).enumerate() {
        // SAFETY: `out` is not null (`n` > 0 here, and null was refused above) and has room for `max` values
        // (`put_array`'s `# Safety`), and `i` < `n` <= `max`: the entry is inside it and writable for this call.
        unsafe { out.add(i).write(*v) };
    }
    Ok(())
}

/// A Cartesian grid from the C arguments.
///
/// # Safety
/// `dims` and `periods` hold `ndims` values.
unsafe fn grid(ndims: c_int, dims: *const c_int, periods: *const c_int) -> R<Cartesian> {
    let n = ndims_arg(ndims)?;
    // SAFETY: `dims` and `periods` hold `n` ints each (MPI 4.1 §8.5.1); `array_arg` refuses null
    // pointers.
    let (d, p) = unsafe { (array_arg(dims, n as c_int, "dims")?, array_arg(periods, n as c_int, "periods")?) };
    let periods: Vec<bool> = p.iter().map(|&x| x != 0).collect();
    Ok(Cartesian::new(d, &periods)?)
}

/// `MPI_Topo_test` (§8.5.5): `MPI_CART`, `MPI_GRAPH`, `MPI_DIST_GRAPH` or
/// `MPI_UNDEFINED`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Topo_test(comm: Handle, status: *mut c_int) -> c_int {
    with_state("MPI_Topo_test", comm, |st| {
        let kind = match topology(st, comm)? {
            Some(Topology::Cartesian(_)) => MPI_CART,
            Some(Topology::Graph(_)) => MPI_GRAPH,
            Some(Topology::DistGraph(_)) => MPI_DIST_GRAPH,
            None => MPI_UNDEFINED,
        };
        // SAFETY: `status` is MPI_Topo_test's out-argument (MPI 4.1 §8.5.5), null or valid for writing one `int` for
        // this call; `put` refuses null.
        unsafe { put(status, kind, "status") }
    })
}

/// `MPI_Dims_create` (§8.5.2): fill the zero entries of `dims` so that
/// their product with the others is `nnodes`, balanced, largest first.
#[no_mangle]
pub unsafe extern "C" fn MPI_Dims_create(nnodes: c_int, ndims: c_int, dims: *mut c_int) -> c_int {
    with_state("MPI_Dims_create", MPI_COMM_WORLD, |_| {
        let n = ndims_arg(ndims)?;
        // SAFETY: `dims` is MPI_Dims_create's in/out array of `ndims` ints (MPI 4.1 §8.5.2), readable and writable for
        // this call; `n` is `ndims`, checked not negative, and `array_arg` refuses null.
        let d = unsafe { array_arg(dims.cast_const(), n as c_int, "dims")? };
        let mut filled = d.to_vec();
        mpi::topo::dims_create(nnodes, &mut filled)?;
        // SAFETY: `dims` has room for `ndims` ints, writable for this call (MPI 4.1 §8.5.2, read just above), which is
        // `put_array`'s requirement; `filled` has `n` = `ndims` values, and `d`, the shared view of `dims`, is no
        // longer used.
        unsafe { put_array(dims, ndims, &filled, "dims") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_create(
    comm_old: Handle,
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
    reorder: c_int,
    comm_cart: *mut Handle,
) -> c_int {
    with_state("MPI_Cart_create", comm_old, |st| {
        // SAFETY: `dims` and `periods` each hold `ndims` ints, readable for this call, as MPI 4.1 §8.5.1 requires of
        // MPI_Cart_create's caller: `grid`'s `# Safety`.
        let g = unsafe { grid(ndims, dims, periods)? };
        let c = intra(st, comm_old)?.create_cartesian(g.dims(), g.periods(), reorder != 0)?;
        let h = register(st, c, comm_old)?;
        // SAFETY: `comm_cart` is MPI_Cart_create's out-argument (MPI 4.1 §8.5.1), null or valid for writing one handle
        // for this call; `put` refuses null.
        unsafe { put(comm_cart, h, "comm_cart") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Cartdim_get(comm: Handle, ndims: *mut c_int) -> c_int {
    with_state("MPI_Cartdim_get", comm, |st| {
        let n = cart(st, comm, "MPI_Cartdim_get")?.dims().len() as c_int;
        // SAFETY: `ndims` is MPI_Cartdim_get's out-argument (MPI 4.1 §8.5.5), null or valid for writing one `int` for
        // this call; `put` refuses null.
        unsafe { put(ndims, n, "ndims") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_get(
    comm: Handle,
    maxdims: c_int,
    dims: *mut c_int,
    periods: *mut c_int,
    coords: *mut c_int,
) -> c_int {
    with_state("MPI_Cart_get", comm, |st| {
        let c = cart(st, comm, "MPI_Cart_get")?;
        let here = c.coords_of(st.comm(comm)?.comm.rank())?;
        let p: Vec<c_int> = c.periods().iter().map(|&x| c_int::from(x)).collect();
        // SAFETY: `dims`, `periods` and `coords` each have room for `maxdims` ints, writable for this call, as MPI 4.1
        // §8.5.5 requires of MPI_Cart_get's caller: `put_array`'s `# Safety` (it writes at most `maxdims` and refuses
        // null).
        unsafe {
            put_array(dims, maxdims, c.dims(), "dims")?;
            put_array(periods, maxdims, &p, "periods")?;
            put_array(coords, maxdims, &here, "coords")
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_rank(comm: Handle, coords: *const c_int, rank: *mut c_int) -> c_int {
    with_state("MPI_Cart_rank", comm, |st| {
        let c = cart(st, comm, "MPI_Cart_rank")?;
        // SAFETY: `coords` holds one int per dimension of the grid, readable for this call, as MPI 4.1 §8.5.5 requires
        // of MPI_Cart_rank's caller: `array_arg`'s requirement (it refuses null).
        let at = unsafe { array_arg(coords, c.dims().len() as c_int, "coords")? };
        let r = c.rank_of(at)?;
        // SAFETY: `rank` is MPI_Cart_rank's out-argument (MPI 4.1 §8.5.5), null or valid for writing one `int` for this
        // call; `put` refuses null.
        unsafe { put(rank, r, "rank") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_coords(comm: Handle, rank: c_int, maxdims: c_int, coords: *mut c_int) -> c_int {
    with_state("MPI_Cart_coords", comm, |st| {
        let at = cart(st, comm, "MPI_Cart_coords")?.coords_of(rank)?;
        // SAFETY: `coords` has room for `maxdims` ints, writable for this call, as MPI 4.1 §8.5.5 requires of
        // MPI_Cart_coords' caller: `put_array`'s `# Safety`.
        unsafe { put_array(coords, maxdims, &at, "coords") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_shift(
    comm: Handle,
    direction: c_int,
    disp: c_int,
    rank_source: *mut c_int,
    rank_dest: *mut c_int,
) -> c_int {
    with_state("MPI_Cart_shift", comm, |st| {
        let c = cart(st, comm, "MPI_Cart_shift")?;
        let dim = usize::try_from(direction)
            .map_err(|_| Fail::new(MPI_ERR_DIMS, format!("direction {direction} is negative")))?;
        let (src, dst) = c.shift(st.comm(comm)?.comm.rank(), dim, disp)?;
        // SAFETY: `rank_source` and `rank_dest` are MPI_Cart_shift's out-arguments (MPI 4.1 §8.5.6), each null or valid
        // for writing one `int` for this call; `put` refuses null.
        unsafe {
            put(rank_source, src.unwrap_or(MPI_PROC_NULL), "rank_source")?;
            put(rank_dest, dst.unwrap_or(MPI_PROC_NULL), "rank_dest")
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_sub(comm: Handle, remain_dims: *const c_int, newcomm: *mut Handle) -> c_int {
    with_state("MPI_Cart_sub", comm, |st| {
        let n = cart(st, comm, "MPI_Cart_sub")?.dims().len();
        // SAFETY: `remain_dims` holds one int per dimension of the grid, readable for this call, as MPI 4.1 §8.5.7
        // requires of MPI_Cart_sub's caller: `array_arg`'s requirement (it refuses null).
        let keep: Vec<bool> =
            unsafe { array_arg(remain_dims, n as c_int, "remain_dims")? }.iter().map(|&x| x != 0).collect();
        let c = st.comm(comm)?.comm.cartesian_sub(&keep)?;
        let h = register(st, Some(c), comm)?;
        // SAFETY: `newcomm` is MPI_Cart_sub's out-argument (MPI 4.1 §8.5.7), null or valid for writing one handle for
        // this call; `put` refuses null.
        unsafe { put(newcomm, h, "newcomm") }
    })
}

/// `comm`'s communicator, which must be an intracommunicator: topologies
/// are not defined on intercommunicators (§8.2), `MPI_ERR_COMM`.
fn intra(st: &State, comm: Handle) -> R<&mpi::SimpleCommunicator> {
    let c = &st.comm(comm)?.comm;
    if c.is_inter() {
        return Err(Fail::new(MPI_ERR_COMM, "a topology needs an intracommunicator (§8.2)"));
    }
    Ok(c)
}

/// This process's rank in a topology of `size` processes on `comm`
/// (`SimpleCommunicator::topology_rank`), or `MPI_UNDEFINED`.
fn map_rank(st: &State, comm: Handle, size: c_int) -> R<c_int> {
    Ok(st.comm(comm)?.comm.topology_rank(size)?.unwrap_or(MPI_UNDEFINED))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_map(
    comm: Handle,
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
    newrank: *mut c_int,
) -> c_int {
    with_state("MPI_Cart_map", comm, |st| {
        // SAFETY: `dims` and `periods` each hold `ndims` ints, readable for this call, as MPI 4.1 §8.5.8 requires of
        // MPI_Cart_map's caller: `grid`'s `# Safety`.
        let g = unsafe { grid(ndims, dims, periods)? };
        let r = map_rank(st, comm, g.size())?;
        // SAFETY: `newrank` is MPI_Cart_map's out-argument (MPI 4.1 §8.5.8), null or valid for writing one `int` for
        // this call; `put` refuses null.
        unsafe { put(newrank, r, "newrank") }
    })
}

/// A graph from `MPI_Graph_create`'s arguments.
///
/// # Safety
/// `index` holds `nnodes` values and `edges` as many as its last.
unsafe fn graph_arg(nnodes: c_int, index: *const c_int, edges: *const c_int) -> R<Graph> {
    // SAFETY: `index` holds `nnodes` ints (MPI 4.1 §8.5.3); `array_arg` refuses a null pointer.
    let ix = unsafe { array_arg(index, nnodes, "index")? };
    let m = ix.last().copied().unwrap_or(0);
    // SAFETY: `edges` holds as many ints as the last entry of `index` says (§8.5.3); `array_arg`
    // refuses null.
    let e = unsafe { array_arg(edges, m, "edges")? };
    Ok(Graph::new(ix, e)?)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Graph_create(
    comm_old: Handle,
    nnodes: c_int,
    index: *const c_int,
    edges: *const c_int,
    reorder: c_int,
    comm_graph: *mut Handle,
) -> c_int {
    with_state("MPI_Graph_create", comm_old, |st| {
        // SAFETY: `index` holds `nnodes` ints and `edges` as many as the last of them, readable for this call, as MPI
        // 4.1 §8.5.3 requires of MPI_Graph_create's caller: `graph_arg`'s `# Safety`.
        let g = unsafe { graph_arg(nnodes, index, edges)? };
        let c = intra(st, comm_old)?.create_graph(g.index(), g.edges(), reorder != 0)?;
        let h = register(st, c, comm_old)?;
        // SAFETY: `comm_graph` is MPI_Graph_create's out-argument (MPI 4.1 §8.5.3), null or valid for writing one
        // handle for this call; `put` refuses null.
        unsafe { put(comm_graph, h, "comm_graph") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Graphdims_get(comm: Handle, nnodes: *mut c_int, nedges: *mut c_int) -> c_int {
    with_state("MPI_Graphdims_get", comm, |st| {
        let g = graph(st, comm, "MPI_Graphdims_get")?;
        // SAFETY: `nnodes` and `nedges` are MPI_Graphdims_get's out-arguments (MPI 4.1 §8.5.5), each null or valid for
        // writing one `int` for this call; `put` refuses null.
        unsafe {
            put(nnodes, g.nnodes(), "nnodes")?;
            put(nedges, g.edges().len() as c_int, "nedges")
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Graph_get(
    comm: Handle,
    maxindex: c_int,
    maxedges: c_int,
    index: *mut c_int,
    edges: *mut c_int,
) -> c_int {
    with_state("MPI_Graph_get", comm, |st| {
        let g = graph(st, comm, "MPI_Graph_get")?;
        // SAFETY: `index` has room for `maxindex` ints and `edges` for `maxedges`, writable for this call, as MPI 4.1
        // §8.5.5 requires of MPI_Graph_get's caller: `put_array`'s `# Safety`.
        unsafe {
            put_array(index, maxindex, g.index(), "index")?;
            put_array(edges, maxedges, g.edges(), "edges")
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Graph_neighbors_count(comm: Handle, rank: c_int, nneighbors: *mut c_int) -> c_int {
    with_state("MPI_Graph_neighbors_count", comm, |st| {
        let n = graph(st, comm, "MPI_Graph_neighbors_count")?.neighbors(rank)?.len() as c_int;
        // SAFETY: `nneighbors` is MPI_Graph_neighbors_count's out-argument (MPI 4.1 §8.5.5), null or valid for writing
        // one `int` for this call; `put` refuses null.
        unsafe { put(nneighbors, n, "nneighbors") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Graph_neighbors(
    comm: Handle,
    rank: c_int,
    maxneighbors: c_int,
    neighbors: *mut c_int,
) -> c_int {
    with_state("MPI_Graph_neighbors", comm, |st| {
        let n = graph(st, comm, "MPI_Graph_neighbors")?.neighbors(rank)?;
        // SAFETY: `neighbors` has room for `maxneighbors` ints, writable for this call, as MPI 4.1 §8.5.5 requires of
        // MPI_Graph_neighbors' caller: `put_array`'s `# Safety`.
        unsafe { put_array(neighbors, maxneighbors, n, "neighbors") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Graph_map(
    comm: Handle,
    nnodes: c_int,
    index: *const c_int,
    edges: *const c_int,
    newrank: *mut c_int,
) -> c_int {
    with_state("MPI_Graph_map", comm, |st| {
        // SAFETY: `index` holds `nnodes` ints and `edges` as many as the last of them, readable for this call, as MPI
        // 4.1 §8.5.8 requires of MPI_Graph_map's caller: `graph_arg`'s `# Safety`.
        let g = unsafe { graph_arg(nnodes, index, edges)? };
        let r = map_rank(st, comm, g.nnodes())?;
        // SAFETY: `newrank` is MPI_Graph_map's out-argument (MPI 4.1 §8.5.8), null or valid for writing one `int` for
        // this call; `put` refuses null.
        unsafe { put(newrank, r, "newrank") }
    })
}

/// A weights argument: `None` for `MPI_UNWEIGHTED`, no weights for
/// `MPI_WEIGHTS_EMPTY`, else `n` values.
///
/// # Safety
/// `p` is one of the two constants or holds `n` values.
unsafe fn weights<'a>(p: *const c_int, n: c_int, what: &str) -> R<Option<&'a [c_int]>> {
    match p as usize {
        MPI_UNWEIGHTED_ADDR => Ok(None),
        MPI_WEIGHTS_EMPTY_ADDR => {
            if n > 0 {
                return Err(Fail::new(MPI_ERR_ARG, format!("{what} is MPI_WEIGHTS_EMPTY for {n} edges")));
            }
            Ok(Some(&[]))
        }
        // SAFETY: `p` is neither of the two constants (handled above), so it holds `n` weights
        // (§8.5.4); `array_arg` refuses null.
        _ => Ok(Some(unsafe { array_arg(p, n, what)? })),
    }
}

const MPI_UNWEIGHTED_ADDR: usize = 10;
const MPI_WEIGHTS_EMPTY_ADDR: usize = 11;

#[no_mangle]
pub unsafe extern "C" fn MPI_Dist_graph_create_adjacent(
    comm_old: Handle,
    indegree: c_int,
    sources: *const c_int,
    sourceweights: *const c_int,
    outdegree: c_int,
    destinations: *const c_int,
    destweights: *const c_int,
    info: Handle,
    reorder: c_int,
    comm_dist_graph: *mut Handle,
) -> c_int {
    with_state("MPI_Dist_graph_create_adjacent", comm_old, |st| {
        st.info_or_null(info)?;
        // SAFETY: `sources` holds `indegree` ints and `destinations` `outdegree`, and `sourceweights` and `destweights`
        // are MPI_UNWEIGHTED, MPI_WEIGHTS_EMPTY or hold as many ints, all readable for this call, as MPI 4.1 §8.5.4
        // requires of MPI_Dist_graph_create_adjacent's caller: `array_arg`'s and `weights`' requirements (null is
        // refused).
        let (s, sw, d, dw) = unsafe {
            (
                array_arg(sources, indegree, "sources")?,
                weights(sourceweights, indegree, "sourceweights")?,
                array_arg(destinations, outdegree, "destinations")?,
                weights(destweights, outdegree, "destweights")?,
            )
        };
        let c = intra(st, comm_old)?.create_dist_graph_adjacent(s, sw, d, dw, reorder != 0)?;
        let h = register(st, Some(c), comm_old)?;
        // SAFETY: `comm_dist_graph` is MPI_Dist_graph_create_adjacent's out-argument (MPI 4.1 §8.5.4), null or valid
        // for writing one handle for this call; `put` refuses null.
        unsafe { put(comm_dist_graph, h, "comm_dist_graph") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Dist_graph_create(
    comm_old: Handle,
    n: c_int,
    sources: *const c_int,
    degrees: *const c_int,
    destinations: *const c_int,
    weights_arg: *const c_int,
    info: Handle,
    reorder: c_int,
    comm_dist_graph: *mut Handle,
) -> c_int {
    with_state("MPI_Dist_graph_create", comm_old, |st| {
        // Arguments this process cannot read still take part in the
        // exchange, so that the others get an error instead of waiting.
        let read = |st: &State| -> R<_> {
            st.info_or_null(info)?;
            // SAFETY: `sources` and `degrees` each hold `n` ints, readable for this call (the closure runs within it),
            // as MPI 4.1 §8.5.4 requires of MPI_Dist_graph_create's caller: `array_arg`'s requirement (it refuses
            // null).
            let (s, deg) = unsafe { (array_arg(sources, n, "sources")?, array_arg(degrees, n, "degrees")?) };
            let total = deg.iter().try_fold(0 as c_int, |acc, &d| if d < 0 { None } else { acc.checked_add(d) });
            let total = total
                .ok_or_else(|| Fail::new(MPI_ERR_ARG, "degrees holds a negative value, or their sum overflows"))?;
            // SAFETY: `destinations` holds one int per edge, the sum `total` of `degrees`, and `weights_arg` is
            // MPI_UNWEIGHTED, MPI_WEIGHTS_EMPTY or holds as many ints, readable for this call (MPI 4.1 §8.5.4):
            // `array_arg`'s and `weights`' requirements.
            let (d, w) =
                unsafe { (array_arg(destinations, total, "destinations")?, weights(weights_arg, total, "weights")?) };
            Ok((s, deg, d, w))
        };
        let args = read(st);
        let comm = intra(st, comm_old)?;
        let c = match args {
            Ok((s, deg, d, w)) => comm.create_dist_graph(s, deg, d, w, reorder != 0)?,
            Err(f) => {
                let why = mpi::ArgError::Missing("this process's arguments to MPI_Dist_graph_create could not be read");
                comm.create_dist_graph_failed(why.into());
                return Err(f);
            }
        };
        let h = register(st, Some(c), comm_old)?;
        // SAFETY: `comm_dist_graph` is MPI_Dist_graph_create's out-argument (MPI 4.1 §8.5.4), null or valid for writing
        // one handle for this call; `put` refuses null.
        unsafe { put(comm_dist_graph, h, "comm_dist_graph") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Dist_graph_neighbors_count(
    comm: Handle,
    indegree: *mut c_int,
    outdegree: *mut c_int,
    weighted: *mut c_int,
) -> c_int {
    with_state("MPI_Dist_graph_neighbors_count", comm, |st| {
        let g = dist_graph(st, comm, "MPI_Dist_graph_neighbors_count")?;
        // SAFETY: `indegree`, `outdegree` and `weighted` are MPI_Dist_graph_neighbors_count's out-arguments (MPI 4.1
        // §8.5.5), each null or valid for writing one `int` for this call; `put` refuses null.
        unsafe {
            put(indegree, g.sources().len() as c_int, "indegree")?;
            put(outdegree, g.destinations().len() as c_int, "outdegree")?;
            put(weighted, c_int::from(g.weighted()), "weighted")
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Dist_graph_neighbors(
    comm: Handle,
    maxindegree: c_int,
    sources: *mut c_int,
    sourceweights: *mut c_int,
    maxoutdegree: c_int,
    destinations: *mut c_int,
    destweights: *mut c_int,
) -> c_int {
    with_state("MPI_Dist_graph_neighbors", comm, |st| {
        let g = dist_graph(st, comm, "MPI_Dist_graph_neighbors")?;
        let given = |p: *mut c_int| !matches!(p as usize, MPI_UNWEIGHTED_ADDR | MPI_WEIGHTS_EMPTY_ADDR);
        // SAFETY: `sources` and `sourceweights` have room for `maxindegree` ints and `destinations` and `destweights`
        // for `maxoutdegree`, writable for this call, as MPI 4.1 §8.5.5 requires of MPI_Dist_graph_neighbors' caller; a
        // weights array is written only when it is not MPI_UNWEIGHTED or MPI_WEIGHTS_EMPTY (`given`): `put_array`'s
        // `# Safety`.
        unsafe {
            put_array(sources, maxindegree, g.sources(), "sources")?;
            put_array(destinations, maxoutdegree, g.destinations(), "destinations")?;
            if let (Some(w), true) = (g.source_weights(), given(sourceweights)) {
                put_array(sourceweights, maxindegree, w, "sourceweights")?;
            }
            if let (Some(w), true) = (g.destination_weights(), given(destweights)) {
                put_array(destweights, maxoutdegree, w, "destweights")?;
            }
        }
        Ok(())
    })
}
