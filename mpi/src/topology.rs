//! The shapes of process topologies (MPI 4.1 chapter 8): Cartesian
//! grids, graphs and distributed graphs, what they answer about their
//! ranks and neighbors, and `MPI_Dims_create`. Plain data: the calls that
//! attach them to communicators and move data along their edges are in
//! [`crate::topo`].

use std::collections::HashMap;

use crate::error::{DimsError, MpiError, Result, TopologyArgError};
use crate::{Count, Rank};

/// The most edges between the same two processes in one direction that a
/// neighborhood collective can tell apart: the round field of a
/// collective's message tag has 10 bits.
pub const MAX_PARALLEL_EDGES: u32 = 1024;

/// A communicator's topology (`MPI_Topo_test`: `MPI_CART`, `MPI_GRAPH`,
/// `MPI_DIST_GRAPH`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Topology {
    /// A Cartesian grid (§8.5.1).
    Cartesian(Cartesian),
    /// A graph every process knows in full (§8.5.3).
    Graph(Graph),
    /// This process's edges of a distributed graph (§8.5.4).
    DistGraph(DistGraph),
}

/// A Cartesian grid: its extents and which dimensions wrap around.
/// Ranks are laid out row-major (the last dimension varies fastest, §8.5.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cartesian {
    dims: Vec<Count>,
    periods: Vec<bool>,
}

/// A graph in `MPI_Graph_create`'s form (§8.5.3): the neighbors of node
/// `i` are `edges[index[i-1]..index[i]]` (`index[-1]` being 0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Graph {
    index: Vec<Count>,
    edges: Vec<Rank>,
}

/// One process's part of a distributed graph (§8.5.4): where its data
/// comes from and where it goes, with optional weights.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DistGraph {
    sources: Vec<Rank>,
    source_weights: Option<Vec<Count>>,
    destinations: Vec<Rank>,
    destination_weights: Option<Vec<Count>>,
}

/// One edge of a neighborhood collective, as seen from one end: the peer
/// (`None`: `MPI_PROC_NULL`, a Cartesian grid's edge) and the round that
/// tells apart several edges between the same two processes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Edge {
    /// The process at the other end.
    pub peer: Option<Rank>,
    /// Matches the round of the same edge at the other end.
    pub round: u32,
}

/// One block of a neighborhood exchange: `len` bytes at `off` of the send
/// or receive buffer, to or from the edge's peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    /// The edge the block travels on.
    pub edge: Edge,
    /// Offset in bytes.
    pub off: usize,
    /// Length in bytes.
    pub len: usize,
}

/// Fill the zero entries of `dims` with a balanced factorization (§8.5.2,
/// `MPI_Dims_create`): their product with the given entries is `nnodes`,
/// the filled values as close to each other as possible and in
/// non-increasing order.
pub fn dims_create(nnodes: Count, dims: &mut [Count]) -> Result<()> {
    if nnodes < 1 {
        return Err(TopologyArgError::Nodes { nnodes }.into());
    }
    if let Some(&d) = dims.iter().find(|&&d| d < 0) {
        return Err(MpiError::Dims(DimsError::Negative { value: d }));
    }
    let fixed: i64 = dims.iter().filter(|&&d| d > 0).map(|&d| i64::from(d)).product();
    let free = dims.iter().filter(|&&d| d == 0).count();
    let nodes = i64::from(nnodes);
    if nodes % fixed != 0 || (free == 0 && fixed != nodes) {
        return Err(MpiError::Dims(DimsError::NoFit { nnodes, dims: dims.to_vec(), fixed }));
    }
    let mut fill = balanced(nodes / fixed, free).into_iter();
    for d in dims.iter_mut().filter(|d| **d == 0) {
        *d = fill.next().unwrap_or(1) as Count;
    }
    Ok(())
}

/// A balanced factorization of `n` into `k` factors, largest first: the
/// one whose largest and smallest factors are closest (§8.5.2: "as close
/// to each other as possible"). Among those, the one whose smallest
/// factor is largest, then whose next smallest is, and so on: the choice
/// MPICH makes (its dims5 test lists 75,396 cases), so that a program
/// gets the same grid under either library (5616 in 4 is 13×9×8×6, not
/// 13×12×6×6; 5040 in 3 is 21×16×15, not 20×18×14).
///
/// The factors are tried smallest first among the divisors of `n`, so
/// candidates come in increasing lexicographic order and the last one of
/// the least spread wins; a branch stops once its smallest factor so far
/// and the least its largest can be are further apart than the best
/// spread found.
///
/// When `k` is at least the number of prime factors of `n` (counted with
/// multiplicity) the answer is those primes, largest first, then ones: no
/// factorization has a smaller largest factor, and none has fewer ones.
/// Only fewer factors than that are searched, so the search's depth is at
/// most 62 whatever `k` is (`MPI_Dims_create(1, 100000, dims)` once
/// overflowed the stack, one frame per dimension).
fn balanced(n: i64, k: usize) -> Vec<i64> {
    let primes = prime_factors(n);
    if k >= primes.len() {
        let mut v: Vec<i64> = primes.into_iter().rev().collect();
        v.resize(k, 1);
        return v;
    }
    balanced_search(n, k)
}

/// The prime factors of `n` (positive), smallest first, with multiplicity.
fn prime_factors(mut n: i64) -> Vec<i64> {
    let mut out = Vec::new();
    let mut p = 2;
    while p * p <= n {
        while n % p == 0 {
            out.push(p);
            n /= p;
        }
        p += 1;
    }
    if n > 1 {
        out.push(n);
    }
    out
}

/// [`balanced`] by search over the divisors of `n`; recursion depth `k`.
fn balanced_search(n: i64, k: usize) -> Vec<i64> {
    /// Factors `cur` (ascending) and `r` more, multiplying to `rest`, each
    /// at least `lo`.
    fn search(rest: i64, r: usize, lo: i64, divs: &[i64], cur: &mut Vec<i64>, best: &mut Option<(i64, Vec<i64>)>) {
        if r == 1 {
            if rest >= lo {
                let spread = rest - cur.first().copied().unwrap_or(rest);
                if best.as_ref().is_none_or(|b| spread <= b.0) {
                    cur.push(rest);
                    *best = Some((spread, cur.clone()));
                    cur.pop();
                }
            }
            return;
        }
        let start = divs.partition_point(|&d| d < lo);
        for &f in &divs[start..] {
            // Every later factor is at least `f`: their product too big,
            // or the largest already too far from the smallest, ends it.
            if f.checked_pow(r as u32).is_none_or(|p| p > rest) {
                break;
            }
            let smallest = cur.first().copied().unwrap_or(f);
            if best.as_ref().is_some_and(|b| f - smallest > b.0) {
                break;
            }
            if rest % f != 0 {
                continue;
            }
            // The largest factor is at least the (r-1)-th root of what is left.
            let left = rest / f;
            let root = (left as f64).powf(1.0 / (r - 1) as f64).floor() as i64 - 1;
            if best.as_ref().is_some_and(|b| root - smallest > b.0) {
                continue;
            }
            cur.push(f);
            search(left, r - 1, f, divs, cur, best);
            cur.pop();
        }
    }
    if k == 0 {
        return Vec::new();
    }
    let mut divs: Vec<i64> = Vec::new();
    let mut d = 1;
    while d * d <= n {
        if n % d == 0 {
            divs.push(d);
            if d * d != n {
                divs.push(n / d);
            }
        }
        d += 1;
    }
    divs.sort_unstable();
    let mut best = None;
    search(n, k, 1, &divs, &mut Vec::with_capacity(k), &mut best);
    let mut v = best.map_or_else(|| vec![1; k], |b| b.1);
    v.reverse();
    v
}

/// Edges numbered by occurrence: the k-th edge to (or from) the same peer
/// gets round k, which the other end numbers the same way (§8.6: several
/// edges between two processes are matched in order).
pub(crate) fn numbered(peers: &[Rank]) -> Result<Vec<Edge>> {
    let mut seen: HashMap<Rank, u32> = HashMap::new();
    peers
        .iter()
        .map(|&p| {
            let k = seen.entry(p).or_insert(0);
            if *k >= MAX_PARALLEL_EDGES {
                return Err(TopologyArgError::ParallelEdges { peer: p, max: MAX_PARALLEL_EDGES }.into());
            }
            *k += 1;
            Ok(Edge { peer: Some(p), round: *k - 1 })
        })
        .collect()
}

impl Cartesian {
    /// A grid of `dims` processes per dimension; `periods[d]` makes
    /// dimension `d` wrap around. Every extent is positive and the grid has
    /// at most `i32::MAX` processes.
    pub fn new(dims: &[Count], periods: &[bool]) -> Result<Cartesian> {
        if dims.len() != periods.len() {
            return Err(TopologyArgError::Lengths {
                a: dims.len(),
                a_what: "dimensions",
                b: periods.len(),
                b_what: "periods",
            }
            .into());
        }
        if let Some((d, &e)) = dims.iter().enumerate().find(|(_, &e)| e <= 0) {
            return Err(MpiError::Dims(DimsError::Extent { dim: d, extent: e }));
        }
        let size = dims.iter().try_fold(1i32, |acc, &e| acc.checked_mul(e));
        if size.is_none() {
            return Err(MpiError::Dims(DimsError::TooLarge { dims: dims.to_vec() }));
        }
        Ok(Cartesian { dims: dims.to_vec(), periods: periods.to_vec() })
    }

    /// Processes per dimension.
    pub fn dims(&self) -> &[Count] {
        &self.dims
    }

    /// Whether each dimension wraps around.
    pub fn periods(&self) -> &[bool] {
        &self.periods
    }

    /// The number of processes on the grid.
    pub fn size(&self) -> Count {
        self.dims.iter().product()
    }

    /// The rank at `coords` (`MPI_Cart_rank`): a coordinate outside a
    /// periodic dimension wraps around; outside another one it is an error.
    pub fn rank_of(&self, coords: &[Count]) -> Result<Rank> {
        if coords.len() != self.dims.len() {
            return Err(TopologyArgError::Lengths {
                a: coords.len(),
                a_what: "coordinates",
                b: self.dims.len(),
                b_what: "dimensions",
            }
            .into());
        }
        let mut r: i64 = 0;
        for (d, ((&c, &e), &p)) in coords.iter().zip(&self.dims).zip(&self.periods).enumerate() {
            let c = if p {
                c.rem_euclid(e)
            } else if (0..e).contains(&c) {
                c
            } else {
                return Err(TopologyArgError::Coordinate { coord: c, dim: d, extent: e }.into());
            };
            r = r * i64::from(e) + i64::from(c);
        }
        Ok(r as Rank)
    }

    /// The coordinates of `rank` (`MPI_Cart_coords`).
    pub fn coords_of(&self, rank: Rank) -> Result<Vec<Count>> {
        if !(0..self.size()).contains(&rank) {
            return Err(MpiError::InvalidRank { rank, size: self.size() });
        }
        let mut rest = rank;
        let mut coords = vec![0; self.dims.len()];
        for (c, &e) in coords.iter_mut().zip(&self.dims).rev() {
            *c = rest % e;
            rest /= e;
        }
        Ok(coords)
    }

    /// The ranks `disp` steps down and up dimension `dim` from `rank`
    /// (`MPI_Cart_shift`: source, destination); `None` past the edge of a
    /// dimension that does not wrap.
    pub fn shift(&self, rank: Rank, dim: usize, disp: Count) -> Result<(Option<Rank>, Option<Rank>)> {
        if dim >= self.dims.len() {
            return Err(MpiError::Dims(DimsError::NoSuchDimension { dim, ndims: self.dims.len() }));
        }
        let coords = self.coords_of(rank)?;
        let (e, periodic) = (i64::from(self.dims[dim]), self.periods[dim]);
        let step = |delta: i64| -> Result<Option<Rank>> {
            let c = i64::from(coords[dim]) + delta;
            if !periodic && !(0..e).contains(&c) {
                return Ok(None);
            }
            let mut at = coords.clone();
            at[dim] = c.rem_euclid(e) as Count;
            self.rank_of(&at).map(Some)
        };
        Ok((step(-i64::from(disp))?, step(i64::from(disp))?))
    }

    /// Keep the dimensions where `remain` is true (`MPI_Cart_sub`): the
    /// color and key that split the grid into the sub-grids through
    /// `rank`, and the sub-grid.
    pub fn sub(&self, rank: Rank, remain: &[bool]) -> Result<(Count, Count, Cartesian)> {
        if remain.len() != self.dims.len() {
            return Err(TopologyArgError::Lengths {
                a: remain.len(),
                a_what: "remain_dims",
                b: self.dims.len(),
                b_what: "dimensions",
            }
            .into());
        }
        let coords = self.coords_of(rank)?;
        let (mut color, mut key) = (0i64, 0i64);
        let (mut dims, mut periods) = (Vec::new(), Vec::new());
        for (d, &keep) in remain.iter().enumerate() {
            let (e, c) = (i64::from(self.dims[d]), i64::from(coords[d]));
            if keep {
                key = key * e + c;
                dims.push(self.dims[d]);
                periods.push(self.periods[d]);
            } else {
                color = color * e + c;
            }
        }
        Ok((color as Count, key as Count, Cartesian { dims, periods }))
    }

    /// The edges of `rank`: per dimension, the neighbor below and the one
    /// above (§8.6), incoming and outgoing. A message that travels up a
    /// dimension `d` has round `2d + 1`, down `2d`, so that on a periodic
    /// dimension of one or two processes, where both neighbors are the
    /// same process, each block still lands in its own place.
    fn edges(&self, rank: Rank) -> Result<(Vec<Edge>, Vec<Edge>)> {
        if self.dims.len() * 2 > MAX_PARALLEL_EDGES as usize {
            return Err(TopologyArgError::TooManyDims { max: MAX_PARALLEL_EDGES / 2 }.into());
        }
        let (mut inc, mut out) = (Vec::new(), Vec::new());
        for d in 0..self.dims.len() {
            let (below, above) = self.shift(rank, d, 1)?;
            let up = 2 * d as u32 + 1;
            inc.push(Edge { peer: below, round: up });
            inc.push(Edge { peer: above, round: up - 1 });
            out.push(Edge { peer: below, round: up - 1 });
            out.push(Edge { peer: above, round: up });
        }
        Ok((inc, out))
    }
}

impl Graph {
    /// A graph of `index.len()` nodes in `MPI_Graph_create`'s form.
    pub fn new(index: &[Count], edges: &[Rank]) -> Result<Graph> {
        let nnodes = index.len() as Count;
        let mut last = 0;
        for (i, &x) in index.iter().enumerate() {
            if x < last {
                return Err(TopologyArgError::IndexDecreases { at: i, value: x, before: last }.into());
            }
            last = x;
        }
        if last as usize != edges.len() {
            return Err(TopologyArgError::IndexEnd { last, edges: edges.len() }.into());
        }
        if let Some((i, &e)) = edges.iter().enumerate().find(|(_, &e)| !(0..nnodes).contains(&e)) {
            return Err(TopologyArgError::Edge { at: i, node: e, nodes: nnodes }.into());
        }
        Ok(Graph { index: index.to_vec(), edges: edges.to_vec() })
    }

    /// The number of nodes.
    pub fn nnodes(&self) -> Count {
        self.index.len() as Count
    }

    /// `MPI_Graph_get`'s `index`.
    pub fn index(&self) -> &[Count] {
        &self.index
    }

    /// `MPI_Graph_get`'s `edges`.
    pub fn edges(&self) -> &[Rank] {
        &self.edges
    }

    /// The neighbors of node `rank` (`MPI_Graph_neighbors`).
    pub fn neighbors(&self, rank: Rank) -> Result<&[Rank]> {
        if !(0..self.nnodes()).contains(&rank) {
            return Err(MpiError::InvalidRank { rank, size: self.nnodes() });
        }
        let r = rank as usize;
        let lo = if r == 0 { 0 } else { self.index[r - 1] as usize };
        Ok(&self.edges[lo..self.index[r] as usize])
    }
}

impl DistGraph {
    /// This process's edges: it receives from `sources` and sends to
    /// `destinations`, each a rank of a communicator of `size` processes;
    /// weights, if given, one per edge and not negative.
    pub fn new(
        size: Count,
        sources: &[Rank],
        source_weights: Option<&[Count]>,
        destinations: &[Rank],
        destination_weights: Option<&[Count]>,
    ) -> Result<DistGraph> {
        for (what, ranks, weights) in
            [("source", sources, source_weights), ("destination", destinations, destination_weights)]
        {
            if let Some(&r) = ranks.iter().find(|&&r| !(0..size).contains(&r)) {
                return Err(MpiError::InvalidRank { rank: r, size });
            }
            if let Some(w) = weights {
                if w.len() != ranks.len() {
                    let (a_what, b_what) = match what {
                        "source" => ("source weights", "sources"),
                        _ => ("destination weights", "destinations"),
                    };
                    return Err(TopologyArgError::Lengths { a: w.len(), a_what, b: ranks.len(), b_what }.into());
                }
                if let Some(&x) = w.iter().find(|&&x| x < 0) {
                    let what = if what == "source" { "source weight" } else { "destination weight" };
                    return Err(TopologyArgError::Negative { what, value: x }.into());
                }
            }
        }
        Ok(DistGraph {
            sources: sources.to_vec(),
            source_weights: source_weights.map(<[Count]>::to_vec),
            destinations: destinations.to_vec(),
            destination_weights: destination_weights.map(<[Count]>::to_vec),
        })
    }

    /// The processes this one receives from, in order.
    pub fn sources(&self) -> &[Rank] {
        &self.sources
    }

    /// The processes this one sends to, in order.
    pub fn destinations(&self) -> &[Rank] {
        &self.destinations
    }

    /// The weights of the incoming edges, if the graph has weights.
    pub fn source_weights(&self) -> Option<&[Count]> {
        self.source_weights.as_deref()
    }

    /// The weights of the outgoing edges, if the graph has weights.
    pub fn destination_weights(&self) -> Option<&[Count]> {
        self.destination_weights.as_deref()
    }

    /// Whether it was made with weights (`MPI_Dist_graph_neighbors_count`'s
    /// `weighted`): false only when both sides were `MPI_UNWEIGHTED`.
    pub fn weighted(&self) -> bool {
        self.source_weights.is_some() || self.destination_weights.is_some()
    }
}

impl Topology {
    /// The edges of process `rank`: incoming, in the order the receive
    /// blocks are laid out, and outgoing, in the order of the send blocks
    /// (§8.6).
    pub fn edges(&self, rank: Rank) -> Result<(Vec<Edge>, Vec<Edge>)> {
        match self {
            Topology::Cartesian(c) => c.edges(rank),
            Topology::Graph(g) => {
                let n = numbered(g.neighbors(rank)?)?;
                Ok((n.clone(), n))
            }
            Topology::DistGraph(d) => Ok((numbered(&d.sources)?, numbered(&d.destinations)?)),
        }
    }
}

/// Decode the edge list `MPI_Dist_graph_create` exchanges: `(source,
/// destination, weight)` triples as 12 little-endian bytes each.
pub(crate) fn triples(bytes: &[u8]) -> Result<Vec<(Rank, Rank, Count)>> {
    if bytes.len() % 12 != 0 {
        return Err(MpiError::Corrupt { what: "a corrupt edge list in dist_graph_create" });
    }
    let word = |c: &[u8], at: usize| i32::from_le_bytes([c[at], c[at + 1], c[at + 2], c[at + 3]]);
    Ok(bytes.chunks_exact(12).map(|c| (word(c, 0), word(c, 4), word(c, 8))).collect())
}

/// `MPI_Dist_graph_create`'s edges as the 12-byte triples [`triples`]
/// decodes, then one byte: whether weights were given. Checked: ranks in
/// `0..size`, degrees and weights not negative, the arrays long enough.
pub(crate) fn edge_list(
    size: Count,
    sources: &[Rank],
    degrees: &[Count],
    destinations: &[Rank],
    weights: Option<&[Count]>,
) -> Result<Vec<u8>> {
    if sources.len() != degrees.len() {
        return Err(TopologyArgError::Lengths {
            a: sources.len(),
            a_what: "sources",
            b: degrees.len(),
            b_what: "degrees",
        }
        .into());
    }
    let mut mine = Vec::new();
    let mut at = 0usize;
    for (&s, &d) in sources.iter().zip(degrees) {
        if !(0..size).contains(&s) {
            return Err(MpiError::InvalidRank { rank: s, size });
        }
        let d = usize::try_from(d).map_err(|_| TopologyArgError::Negative { what: "degree", value: d })?;
        let end = at
            .checked_add(d)
            .filter(|&e| e <= destinations.len())
            .ok_or(TopologyArgError::Degrees { destinations: destinations.len() })?;
        for (k, &t) in destinations.iter().enumerate().take(end).skip(at) {
            if !(0..size).contains(&t) {
                return Err(MpiError::InvalidRank { rank: t, size });
            }
            let w = match weights {
                Some(w) => *w.get(k).ok_or(TopologyArgError::Lengths {
                    a: w.len(),
                    a_what: "weights",
                    b: destinations.len(),
                    b_what: "destinations",
                })?,
                None => 0,
            };
            if w < 0 {
                return Err(TopologyArgError::Negative { what: "weight", value: w }.into());
            }
            for v in [s, t, w] {
                mine.extend(v.to_le_bytes());
            }
        }
        at = end;
    }
    mine.push(u8::from(weights.is_some()));
    Ok(mine)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_are_balanced_and_largest_first() {
        assert_eq!(balanced(12, 2), vec![4, 3]);
        assert_eq!(balanced(27, 2), vec![9, 3]);
        assert_eq!(balanced(27, 3), vec![3, 3, 3]);
        assert_eq!(balanced(7, 3), vec![7, 1, 1]);
        assert_eq!(balanced(24, 3), vec![4, 3, 2]);
        assert_eq!(balanced(1, 0), Vec::<i64>::new());
        // Equal spread: the larger smallest factors win (MPICH's choice).
        assert_eq!(balanced(5616, 4), vec![13, 9, 8, 6]);
        assert_eq!(balanced(5040, 3), vec![21, 16, 15]);
        assert_eq!(balanced(10800, 3), vec![27, 20, 20]);
        assert_eq!(balanced(72, 2), vec![9, 8]);
        assert_eq!(balanced(1323, 2), vec![49, 27]);
        assert_eq!(balanced(1, 3), vec![1, 1, 1]);
        assert_eq!(balanced(2_147_483_647, 2), vec![2_147_483_647, 1]);
        let mut d = [0, 3, 0];
        dims_create(24, &mut d).unwrap();
        assert_eq!(d, [4, 3, 2]);
        assert!(matches!(dims_create(10, &mut [0, 3]), Err(MpiError::Dims(DimsError::NoFit { fixed: 3, .. }))));
        assert!(matches!(dims_create(6, &mut [-1, 0]), Err(MpiError::Dims(DimsError::Negative { value: -1 }))));
    }

    /// Many dimensions: no recursion per dimension (issue 47, break 10:
    /// `MPI_Dims_create(1, n, dims)` overflowed the stack from n = 70,000),
    /// and the prime shortcut agrees with the search wherever it applies.
    #[test]
    fn dims_with_many_dimensions_need_no_deep_recursion() {
        for n in [1i32, 2, 12, 720, 65_536] {
            let mut d = vec![0; 1_000_000];
            dims_create(n, &mut d).unwrap();
            assert_eq!(d.iter().map(|&x| i64::from(x)).product::<i64>(), i64::from(n));
            assert!(d.windows(2).all(|w| w[0] >= w[1]), "not largest first");
        }
        let mut d = vec![0; 100_000];
        dims_create(12, &mut d).unwrap();
        assert_eq!(&d[..4], &[3, 2, 2, 1]);
        for n in 1..=400 {
            let omega = prime_factors(n).len();
            for k in omega..=omega + 2 {
                assert_eq!(balanced(n, k), balanced_search(n, k), "n = {n}, k = {k}");
            }
        }
    }

    #[test]
    fn cartesian_ranks_are_row_major_and_wrap_only_where_periodic() {
        let c = Cartesian::new(&[2, 3], &[false, true]).unwrap();
        assert_eq!(c.size(), 6);
        assert_eq!(c.rank_of(&[1, 2]).unwrap(), 5);
        assert_eq!(c.coords_of(5).unwrap(), vec![1, 2]);
        assert_eq!(c.rank_of(&[1, -1]).unwrap(), 5);
        assert!(c.rank_of(&[2, 0]).is_err());
        assert!(matches!(c.coords_of(6), Err(MpiError::InvalidRank { .. })));
        // Rank 1 is (0, 1): down dimension 0 is off the grid, up is (1, 1).
        assert_eq!(c.shift(1, 0, 1).unwrap(), (None, Some(4)));
        // Dimension 1 wraps: (0, 1) - 2 = (0, 2), (0, 1) + 2 = (0, 0).
        assert_eq!(c.shift(1, 1, 2).unwrap(), (Some(2), Some(0)));
        assert!(matches!(c.shift(1, 2, 1), Err(MpiError::Dims(_))));
        assert!(matches!(Cartesian::new(&[2, 0], &[false, false]), Err(MpiError::Dims(_))));
        assert!(Cartesian::new(&[2], &[false, true]).is_err());
    }

    #[test]
    fn a_sub_grid_is_colored_by_the_dropped_coordinates() {
        let c = Cartesian::new(&[2, 3, 2], &[true, false, true]).unwrap();
        // Rank 7 is (1, 0, 1).
        let (color, key, sub) = c.sub(7, &[true, false, true]).unwrap();
        assert_eq!((color, key), (0, 3));
        assert_eq!((sub.dims(), sub.periods()), (&[2, 2][..], &[true, true][..]));
        let (color, key, sub) = c.sub(7, &[false, true, false]).unwrap();
        assert_eq!((color, key, sub.dims()), (3, 0, &[3][..]));
    }

    #[test]
    fn each_outgoing_edge_matches_the_incoming_edge_at_its_peer() {
        // The block a process sends on an outgoing edge must arrive on the
        // incoming edge, at the peer, with the same peer and round: check
        // every pair, including periodic dimensions of 1 and 2 processes.
        for (dims, periods) in [(vec![3, 4], vec![true, false]), (vec![2, 1], vec![true, true]), (vec![5], vec![false])]
        {
            let c = Topology::Cartesian(Cartesian::new(&dims, &periods).unwrap());
            check_matching(&c, dims.iter().product());
        }
        let g = Topology::Graph(Graph::new(&[2, 4, 5], &[1, 1, 0, 0, 2]).unwrap());
        let (inc, out) = g.edges(0).unwrap();
        assert_eq!(inc, out);
        assert_eq!(out.iter().map(|e| e.round).collect::<Vec<_>>(), vec![0, 1]);
        assert!(Graph::new(&[1, 1], &[1]).is_ok());
        assert!(Graph::new(&[2, 1], &[1, 0]).is_err());
        assert!(Graph::new(&[1], &[3]).is_err());
    }

    fn check_matching(t: &Topology, n: Rank) {
        for r in 0..n {
            let (_, out) = t.edges(r).unwrap();
            for (j, e) in out.iter().enumerate() {
                let Some(p) = e.peer else { continue };
                let (inc, _) = t.edges(p).unwrap();
                let hits = inc.iter().filter(|i| i.peer == Some(r) && i.round == e.round).count();
                assert_eq!(hits, 1, "{t:?}: rank {r}'s outgoing edge {j} to {p} must match one incoming edge there");
            }
        }
    }

    #[test]
    fn dist_graph_edges_are_checked() {
        assert!(DistGraph::new(3, &[0, 1], None, &[2], None).is_ok());
        assert!(matches!(DistGraph::new(3, &[3], None, &[], None), Err(MpiError::InvalidRank { .. })));
        assert!(DistGraph::new(3, &[0], Some(&[1, 2]), &[], None).is_err());
        assert!(DistGraph::new(3, &[0], Some(&[-1]), &[], None).is_err());
        assert!(!DistGraph::new(3, &[0], None, &[1], None).unwrap().weighted());
    }
}
