//! Collective algorithms, each written once as a [`Schedule`] for rank `r`
//! of `n` (the blocking and non-blocking calls run the same schedules).
//! Lengths and offsets are in bytes; `BUF_SEND` holds the caller's input
//! and `BUF_RECV` its output.

use super::schedule::{Builder, NodeId, Schedule, Slice, BUF_RECV, BUF_SEND};

fn empty() -> Slice {
    Slice::new(BUF_SEND, 0, 0)
}

/// Dissemination barrier (Hensgen, Finkel and Manber): ⌈log2 n⌉ rounds of
/// zero-byte messages to `r + 2^k` from `r - 2^k`.
pub fn barrier(n: u32, r: u32) -> Schedule {
    let mut b = Builder::new();
    let mut prev: Vec<NodeId> = Vec::new();
    let (mut k, mut round) = (1u32, 0u32);
    while k < n {
        let s = b.send((r + k) % n, round, empty(), &prev);
        let v = b.recv((r + n - k) % n, round, Slice::new(BUF_RECV, 0, 0), &prev);
        prev = vec![s, v];
        k *= 2;
        round += 1;
    }
    b.build()
}

/// Binomial-tree broadcast of `len` bytes in `BUF_RECV` from `root`.
pub fn bcast_binomial(n: u32, r: u32, root: u32, len: u64) -> Schedule {
    let mut b = Builder::new();
    let all = Slice::new(BUF_RECV, 0, len);
    let vr = (r + n - root) % n;
    let mut got: Vec<NodeId> = Vec::new();
    let mut mask = 1u32;
    while mask < n {
        if vr & mask != 0 {
            got = vec![b.recv((vr - mask + root) % n, 0, all, &[])];
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    while mask > 0 {
        if vr + mask < n {
            b.send((vr + mask + root) % n, 0, all, &got);
        }
        mask >>= 1;
    }
    b.build()
}

/// Reduce `len` bytes to `root` over a binomial tree of ranks in their
/// natural order (so that a non-commutative operation combines in rank
/// order, MPI 4.1 §6.9.5), then from rank 0 to the root. The result is in
/// `BUF_RECV` at the root (other ranks use theirs as scratch).
pub fn reduce_binomial(n: u32, r: u32, root: u32, len: u64) -> Schedule {
    let mut b = Builder::new();
    let acc = Slice::new(BUF_RECV, 0, len);
    let (last, sent) = reduce_to_zero(&mut b, n, r, acc);
    if root != 0 {
        if r == 0 {
            b.send(root, 31, acc, &[last]);
        }
        if r == root {
            // After its own contribution left (the send reads acc).
            let after: Vec<NodeId> = sent.into_iter().chain([last]).collect();
            b.recv(0, 31, acc, &after);
        }
    }
    b.build()
}

/// The binomial reduction to rank 0 in rank order, shared by reduce and
/// reduce-scatter: `acc` starts as this rank's `BUF_SEND` and, at rank 0,
/// ends as the result. Returns the last node that wrote `acc` and, below
/// rank 0, the send of the partial result to the parent.
fn reduce_to_zero(b: &mut Builder, n: u32, r: u32, acc: Slice) -> (NodeId, Option<NodeId>) {
    let t = b.tmp(acc.len);
    let tmp = Slice::new(t, 0, acc.len);
    let mut last = b.copy(Slice::new(BUF_SEND, 0, acc.len), acc, &[]);
    let mut mask = 1u32;
    while mask < n {
        if r & mask != 0 {
            return (last, Some(b.send(r - mask, mask.trailing_zeros(), acc, &[last])));
        }
        if r + mask < n {
            let v = b.recv(r + mask, mask.trailing_zeros(), tmp, &[last]);
            // tmp = acc ⊕ tmp (the lower ranks on the left), then acc = tmp.
            let c = b.calc(acc, tmp, &[v]);
            last = b.copy(tmp, acc, &[c]);
        }
        mask <<= 1;
    }
    (last, None)
}

/// Allreduce of `len` bytes by recursive doubling, with the usual fold of
/// the ranks beyond the largest power of two (even ranks below `2·rem`
/// hand their data to the next odd rank and get the result back). Every
/// combination keeps the lower ranks on the left, so non-commutative
/// operations are combined in rank order too.
pub fn allreduce_recursive_doubling(n: u32, r: u32, len: u64) -> Schedule {
    let mut b = Builder::new();
    let acc = Slice::new(BUF_RECV, 0, len);
    let t = b.tmp(len);
    let tmp = Slice::new(t, 0, len);
    let mut last = b.copy(Slice::new(BUF_SEND, 0, len), acc, &[]);
    let pof2 = if n == 0 { 1 } else { 1u32 << (31 - n.leading_zeros()) };
    let rem = n - pof2;
    let newrank: Option<u32> = if r < 2 * rem {
        if r % 2 == 0 {
            b.send(r + 1, 0, acc, &[last]);
            None
        } else {
            let v = b.recv(r - 1, 0, tmp, &[last]);
            // acc = tmp ⊕ acc: the even rank is the lower one.
            last = b.calc(tmp, acc, &[v]);
            Some(r / 2)
        }
    } else {
        Some(r - rem)
    };
    if let Some(me) = newrank {
        let mut mask = 1u32;
        let mut round = 1u32;
        while mask < pof2 {
            let p = me ^ mask;
            let peer = if p < rem { p * 2 + 1 } else { p + rem };
            let s = b.send(peer, round, acc, &[last]);
            let v = b.recv(peer, round, tmp, &[last]);
            last = if peer < r {
                b.calc(tmp, acc, &[v, s])
            } else {
                let c = b.calc(acc, tmp, &[v, s]);
                b.copy(tmp, acc, &[c])
            };
            mask <<= 1;
            round += 1;
        }
    }
    if r < 2 * rem {
        if r % 2 == 1 {
            b.send(r - 1, 63, acc, &[last]);
        } else {
            b.recv(r + 1, 63, acc, &[last]);
        }
    }
    b.build()
}

/// Blocks of a variable-count collective: `(offset, length)` in bytes per rank.
pub type Blocks = [(u64, u64)];

/// Linear gather to `root`: rank `i`'s `send` lands at `blocks[i]` of the
/// root's `BUF_RECV`.
pub fn gather_linear(n: u32, r: u32, root: u32, send_len: u64, blocks: &Blocks) -> Schedule {
    let mut b = Builder::new();
    if r == root {
        for i in 0..n {
            let (off, len) = blocks[i as usize];
            if i == r {
                b.copy(Slice::new(BUF_SEND, 0, send_len), Slice::new(BUF_RECV, off, len), &[]);
            } else {
                b.recv(i, 0, Slice::new(BUF_RECV, off, len), &[]);
            }
        }
    } else {
        b.send(root, 0, Slice::new(BUF_SEND, 0, send_len), &[]);
    }
    b.build()
}

/// Linear scatter from `root`: `blocks[i]` of the root's `BUF_SEND` goes to
/// rank `i`'s `BUF_RECV`.
pub fn scatter_linear(n: u32, r: u32, root: u32, recv_len: u64, blocks: &Blocks) -> Schedule {
    let mut b = Builder::new();
    if r == root {
        for i in 0..n {
            let (off, len) = blocks[i as usize];
            if i == r {
                b.copy(Slice::new(BUF_SEND, off, len), Slice::new(BUF_RECV, 0, recv_len), &[]);
            } else {
                b.send(i, 0, Slice::new(BUF_SEND, off, len), &[]);
            }
        }
    } else {
        b.recv(root, 0, Slice::new(BUF_RECV, 0, recv_len), &[]);
    }
    b.build()
}

/// Ring allgather: each rank's block travels n-1 steps around the ring;
/// `blocks[i]` is where rank `i`'s contribution goes in `BUF_RECV`.
pub fn allgather_ring(n: u32, r: u32, blocks: &Blocks) -> Schedule {
    let mut b = Builder::new();
    let (off, len) = blocks[r as usize];
    let mut last = b.copy(Slice::new(BUF_SEND, 0, len), Slice::new(BUF_RECV, off, len), &[]);
    let (right, left) = ((r + 1) % n, (r + n - 1) % n);
    for step in 0..n.saturating_sub(1) {
        let out = (r + n - step) % n;
        let inn = (r + n - step - 1) % n;
        let (so, sl) = blocks[out as usize];
        let (io, il) = blocks[inn as usize];
        b.send(right, step, Slice::new(BUF_RECV, so, sl), &[last]);
        last = b.recv(left, step, Slice::new(BUF_RECV, io, il), &[last]);
    }
    b.build()
}

/// Pairwise-exchange all-to-all: in step `s` rank `r` sends to `r + s` and
/// receives from `r - s`. `sblocks[i]` of `BUF_SEND` goes to rank `i`, and
/// rank `i`'s data lands at `rblocks[i]` of `BUF_RECV`.
pub fn alltoall_pairwise(n: u32, r: u32, sblocks: &Blocks, rblocks: &Blocks) -> Schedule {
    let mut b = Builder::new();
    let (so, sl) = sblocks[r as usize];
    let (ro, rl) = rblocks[r as usize];
    let mut last = b.copy(Slice::new(BUF_SEND, so, sl), Slice::new(BUF_RECV, ro, rl.min(sl)), &[]);
    for s in 1..n {
        let to = (r + s) % n;
        let from = (r + n - s) % n;
        let (o, l) = sblocks[to as usize];
        b.send(to, 0, Slice::new(BUF_SEND, o, l), &[last]);
        let (o, l) = rblocks[from as usize];
        last = b.recv(from, 0, Slice::new(BUF_RECV, o, l), &[last]);
    }
    b.build()
}

/// Inclusive (`exclusive == false`) or exclusive prefix reduction along a
/// chain of ranks: rank `r` receives the prefix of ranks `0..r` from `r-1`,
/// combines it on the left of its own data and passes the result on.
pub fn scan_linear(n: u32, r: u32, len: u64, exclusive: bool) -> Schedule {
    let mut b = Builder::new();
    let own = Slice::new(BUF_SEND, 0, len);
    let out = Slice::new(BUF_RECV, 0, len);
    let t = b.tmp(len);
    let acc = Slice::new(t, 0, len);
    // acc = own, then, below rank 0, acc = prefix ⊕ own.
    let mut last = b.copy(own, acc, &[]);
    if r > 0 {
        // The prefix of ranks 0..r is the exclusive result.
        let v = b.recv(r - 1, 0, out, &[]);
        last = b.calc(out, acc, &[v, last]);
    }
    if !exclusive {
        last = b.copy(acc, out, &[last]);
    }
    if r + 1 < n {
        b.send(r + 1, 0, acc, &[last]);
    }
    b.build()
}

/// Byte ranges of `n` chunks of `len` bytes, each a whole number of
/// `elem`-byte elements (the last ones may be shorter or empty).
pub fn chunks(n: u32, len: u64, elem: u64) -> Vec<(u64, u64)> {
    let elems = len / elem.max(1);
    let per = elems.div_ceil(n.max(1) as u64) * elem.max(1);
    (0..n as u64).map(|k| (k * per).min(len)).map(|o| (o, per.min(len - o))).collect()
}

/// Broadcast for large messages (van de Geijn): the root's buffer in `n`
/// chunks is scattered down a binomial tree (each rank gets the chunks of
/// its subtree in one message), then a ring allgather completes every copy.
/// About 2·len bytes cross each link instead of log2(n)·len.
pub fn bcast_scatter_allgather(n: u32, r: u32, root: u32, len: u64) -> Schedule {
    let mut b = Builder::new();
    let ch = chunks(n, len, 1);
    // Relative rank vr owns chunk vr; a subtree [a, a+m) is one byte range.
    let range = |a: u32, m: u32| -> Slice {
        let end = (a + m).min(n);
        let (o, _) = ch[a as usize];
        let last = ch[end as usize - 1];
        Slice::new(BUF_RECV, o, last.0 + last.1 - o)
    };
    let vr = (r + n - root) % n;
    let mut after: Vec<NodeId> = Vec::new();
    let mut mask = 1u32;
    while mask < n {
        if vr & mask != 0 {
            after = vec![b.recv((vr - mask + root) % n, 0, range(vr, mask), &[])];
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    let mut sends = after.clone();
    while mask > 0 {
        if vr + mask < n {
            sends.push(b.send((vr + mask + root) % n, 0, range(vr + mask, mask), &after));
        }
        mask >>= 1;
    }
    // Ring allgather of the chunks, in relative ranks.
    let (right, left) = ((vr + 1) % n + root, (vr + n - 1) % n + root);
    let (right, left) = (right % n, left % n);
    let mut last = sends;
    for step in 0..n.saturating_sub(1) {
        let out = ((vr + n - step) % n) as usize;
        let inn = ((vr + 2 * n - step - 1) % n) as usize;
        let s = b.send(right, 1 + step, Slice::new(BUF_RECV, ch[out].0, ch[out].1), &last);
        let v = b.recv(left, 1 + step, Slice::new(BUF_RECV, ch[inn].0, ch[inn].1), &last);
        last = vec![s, v];
    }
    b.build()
}

/// Allreduce for large messages and commutative operations: a ring
/// reduce-scatter (each rank ends with one fully reduced chunk) and a ring
/// allgather; 2·(n-1)/n·len bytes per rank, whatever n. Chunks are whole
/// `elem`-byte elements.
pub fn allreduce_ring(n: u32, r: u32, len: u64, elem: u64) -> Schedule {
    let mut b = Builder::new();
    let ch = chunks(n, len, elem);
    let acc = |k: usize| Slice::new(BUF_RECV, ch[k].0, ch[k].1);
    let biggest = ch.iter().map(|c| c.1).max().unwrap_or(0);
    let t = b.tmp(biggest);
    let mut last = vec![b.copy(Slice::new(BUF_SEND, 0, len), Slice::new(BUF_RECV, 0, len), &[])];
    let (right, left) = ((r + 1) % n, (r + n - 1) % n);
    let idx = |x: i64| x.rem_euclid(n as i64) as usize;
    for s in 0..n.saturating_sub(1) {
        let out = idx(r as i64 - s as i64);
        let inn = idx(r as i64 - s as i64 - 1);
        let tmp = Slice::new(t, 0, ch[inn].1);
        let snd = b.send(right, s, acc(out), &last);
        let v = b.recv(left, s, tmp, &last);
        // acc[inn] = tmp ⊕ acc[inn]
        let c = b.calc(tmp, acc(inn), &[v, snd]);
        last = vec![c];
    }
    for s in 0..n.saturating_sub(1) {
        let out = idx(r as i64 + 1 - s as i64);
        let inn = idx(r as i64 - s as i64);
        let snd = b.send(right, n + s, acc(out), &last);
        let v = b.recv(left, n + s, acc(inn), &last);
        last = vec![snd, v];
    }
    b.build()
}

/// Reduce-scatter with equal blocks of `blk` bytes: a binomial reduce of
/// all `n·blk` bytes to rank 0 (rank order kept) and a linear scatter of
/// the blocks, in one schedule. `BUF_RECV` holds the `n·blk` accumulator,
/// then this rank's block at offset `n·blk`.
pub fn reduce_scatter_block(n: u32, r: u32, blk: u64) -> Schedule {
    let total = blk * n as u64;
    let mut b = Builder::new();
    let out = Slice::new(BUF_RECV, total, blk);
    let (last, _) = reduce_to_zero(&mut b, n, r, Slice::new(BUF_RECV, 0, total));
    if r == 0 {
        for i in 0..n {
            let blk_i = Slice::new(BUF_RECV, i as u64 * blk, blk);
            if i == 0 {
                b.copy(blk_i, out, &[last]);
            } else {
                b.send(i, 40, blk_i, &[last]);
            }
        }
    } else {
        b.recv(0, 40, out, &[]);
    }
    b.build()
}

/// Bruck's all-to-all for small blocks of `blk` bytes: ⌈log2 n⌉ steps
/// instead of n-1. The blocks are rotated so that block `i` is for rank
/// `r + i`; in step `k` the blocks whose index has bit `k` set travel
/// together (packed) to `r + 2^k`; a final rotation puts rank `j`'s block
/// at `j`.
pub fn alltoall_bruck(n: u32, r: u32, blk: u64) -> Schedule {
    let mut b = Builder::new();
    let nn = n as u64;
    let t = b.tmp(nn * blk);
    let half = nn.div_ceil(2) * blk;
    let p = b.tmp(half);
    let u = b.tmp(half);
    let block = |buf: u8, i: u64| Slice::new(buf, i * blk, blk);
    // Rotation: t[i] = send[(r + i) % n].
    let mut last: Vec<NodeId> =
        (0..nn).map(|i| b.copy(block(BUF_SEND, (r as u64 + i) % nn), block(t, i), &[])).collect();
    let mut k = 1u64;
    let mut round = 0;
    while k < nn {
        let moving: Vec<u64> = (0..nn).filter(|i| i & k != 0).collect();
        let len = moving.len() as u64 * blk;
        let packs: Vec<NodeId> =
            moving.iter().enumerate().map(|(j, &i)| b.copy(block(t, i), block(p, j as u64), &last)).collect();
        let snd = b.send(((r as u64 + k) % nn) as u32, round, Slice::new(p, 0, len), &packs);
        let v = b.recv(((r as u64 + nn - k) % nn) as u32, round, Slice::new(u, 0, len), &last);
        let mut after = vec![snd];
        for (j, &i) in moving.iter().enumerate() {
            after.push(b.copy(block(u, j as u64), block(t, i), &[v, snd]));
        }
        last = after;
        k <<= 1;
        round += 1;
    }
    // Inverse rotation: recv[j] = t[(r - j) mod n].
    for j in 0..nn {
        b.copy(block(t, (r as u64 + nn - j) % nn), block(BUF_RECV, j), &last);
    }
    b.build()
}

/// Pipelined chain broadcast (LibNBC's `NBC_Ibcast` shape, seed 002 §5):
/// the message in chunks of `chunk` bytes flows down the chain of ranks in
/// order from the root; a rank forwards chunk `i` as soon as it has it, so
/// the links work in parallel on different chunks.
pub fn bcast_pipeline(n: u32, r: u32, root: u32, len: u64, chunk: u64) -> Schedule {
    let mut b = Builder::new();
    let vr = (r + n - root) % n;
    let (prev, next) = ((r + n - 1) % n, (r + 1) % n);
    let chunk = chunk.max(1);
    let count = len.div_ceil(chunk).max(1);
    let mut last_recv: Vec<NodeId> = Vec::new();
    for i in 0..count {
        let off = (i * chunk).min(len);
        let part = Slice::new(BUF_RECV, off, chunk.min(len - off));
        let round = (i % 1000) as u32;
        let have = if vr == 0 {
            Vec::new()
        } else {
            let v = b.recv(prev, round, part, &last_recv);
            last_recv = vec![v];
            vec![v]
        };
        if vr + 1 < n {
            b.send(next, round, part, &have);
        }
    }
    b.build()
}

/// Rabenseifner's allreduce for large messages and commutative operations:
/// a reduce-scatter by recursive halving, then an allgather by recursive
/// doubling, over the largest power of two of ranks (the others fold in and
/// out as in [`allreduce_recursive_doubling`]). About 2·len bytes per rank
/// in 2·log2(n) steps. Chunks are whole `elem`-byte elements.
pub fn allreduce_rabenseifner(n: u32, r: u32, len: u64, elem: u64) -> Schedule {
    let mut b = Builder::new();
    let acc_all = Slice::new(BUF_RECV, 0, len);
    let t = b.tmp(len);
    let mut last = b.copy(Slice::new(BUF_SEND, 0, len), acc_all, &[]);
    let pof2 = if n == 0 { 1 } else { 1u32 << (31 - n.leading_zeros()) };
    let rem = n - pof2;
    let newrank: Option<u32> = if r < 2 * rem {
        if r % 2 == 0 {
            b.send(r + 1, 0, acc_all, &[last]);
            None
        } else {
            let v = b.recv(r - 1, 0, Slice::new(t, 0, len), &[last]);
            last = b.calc(Slice::new(t, 0, len), acc_all, &[v]);
            Some(r / 2)
        }
    } else {
        Some(r - rem)
    };
    let ch = chunks(pof2, len, elem);
    let span = |lo: u32, hi: u32| -> (u64, u64) {
        let o = ch[lo as usize].0;
        let end = ch[hi as usize - 1].0 + ch[hi as usize - 1].1;
        (o, end - o)
    };
    let real = |p: u32| if p < rem { p * 2 + 1 } else { p + rem };
    if let Some(me) = newrank {
        // Reduce-scatter by recursive halving: my segment halves each step.
        let (mut lo, mut hi) = (0u32, pof2);
        let mut mask = pof2 / 2;
        let mut round = 1u32;
        while mask > 0 {
            let partner = me ^ mask;
            let mid = lo + (hi - lo) / 2;
            let (keep, give) = if me < partner { ((lo, mid), (mid, hi)) } else { ((mid, hi), (lo, mid)) };
            let (go, gl) = span(give.0, give.1);
            let (ko, kl) = span(keep.0, keep.1);
            let s = b.send(real(partner), round, Slice::new(BUF_RECV, go, gl), &[last]);
            let v = b.recv(real(partner), round, Slice::new(t, 0, kl), &[last]);
            last = b.calc(Slice::new(t, 0, kl), Slice::new(BUF_RECV, ko, kl), &[v, s]);
            (lo, hi) = keep;
            mask /= 2;
            round += 1;
        }
        // Allgather by recursive doubling: my segment doubles each step.
        let mut mask = 1u32;
        while mask < pof2 {
            let partner = me ^ mask;
            let size = hi - lo;
            let (theirs_lo, theirs_hi) = if me & mask == 0 { (hi, hi + size) } else { (lo - size, lo) };
            let (mo, ml) = span(lo, hi);
            let (to, tl) = span(theirs_lo, theirs_hi);
            let s = b.send(real(partner), round, Slice::new(BUF_RECV, mo, ml), &[last]);
            let v = b.recv(real(partner), round, Slice::new(BUF_RECV, to, tl), &[last]);
            // A zero-length copy joins the send and the receive.
            last = b.copy(Slice::new(BUF_RECV, 0, 0), Slice::new(BUF_RECV, 0, 0), &[s, v]);
            lo = lo.min(theirs_lo);
            hi = hi.max(theirs_hi);
            mask *= 2;
            round += 1;
        }
    }
    if r < 2 * rem {
        if r % 2 == 1 {
            b.send(r - 1, 63, acc_all, &[last]);
        } else {
            b.recv(r + 1, 63, acc_all, &[last]);
        }
    }
    b.build()
}

/// Binomial-tree gather of equal blocks of `blk` bytes to `root`: each rank
/// collects its subtree's blocks and passes them up in one message
/// (⌈log2 n⌉ steps at the root instead of n-1 messages).
pub fn gather_binomial(n: u32, r: u32, root: u32, blk: u64) -> Schedule {
    let mut b = Builder::new();
    let nn = n as u64;
    let t = b.tmp(nn * blk);
    let vr = (r + n - root) % n;
    let mut have = vec![b.copy(Slice::new(BUF_SEND, 0, blk), Slice::new(t, 0, blk), &[])];
    let mut mask = 1u32;
    let mut sent = false;
    while mask < n {
        if vr & mask != 0 {
            let cnt = mask.min(n - vr) as u64;
            b.send((vr - mask + root) % n, mask.trailing_zeros(), Slice::new(t, 0, cnt * blk), &have);
            sent = true;
            break;
        }
        if vr + mask < n {
            let cnt = mask.min(n - vr - mask) as u64;
            let off = mask as u64 * blk;
            have.push(b.recv((vr + mask + root) % n, mask.trailing_zeros(), Slice::new(t, off, cnt * blk), &[]));
        }
        mask <<= 1;
    }
    if !sent {
        for j in 0..nn {
            let rank = (j + root as u64) % nn;
            b.copy(Slice::new(t, j * blk, blk), Slice::new(BUF_RECV, rank * blk, blk), &have);
        }
    }
    b.build()
}

/// Binomial-tree scatter of equal blocks of `blk` bytes from `root`: each
/// rank receives its subtree's blocks in one message and passes the
/// children's parts on.
pub fn scatter_binomial(n: u32, r: u32, root: u32, blk: u64) -> Schedule {
    let mut b = Builder::new();
    let nn = n as u64;
    let t = b.tmp(nn * blk);
    let vr = (r + n - root) % n;
    let mut have: Vec<NodeId> = Vec::new();
    if vr == 0 {
        // Relative order: t[j] = send[(j + root) % n].
        for j in 0..nn {
            let rank = (j + root as u64) % nn;
            have.push(b.copy(Slice::new(BUF_SEND, rank * blk, blk), Slice::new(t, j * blk, blk), &[]));
        }
    }
    let mut mask = 1u32;
    while mask < n {
        if vr & mask != 0 {
            let cnt = mask.min(n - vr) as u64;
            have = vec![b.recv((vr - mask + root) % n, mask.trailing_zeros(), Slice::new(t, 0, cnt * blk), &[])];
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    while mask > 0 {
        if vr + mask < n {
            let cnt = mask.min(n - vr - mask) as u64;
            let off = mask as u64 * blk;
            b.send((vr + mask + root) % n, mask.trailing_zeros(), Slice::new(t, off, cnt * blk), &have);
        }
        mask >>= 1;
    }
    b.copy(Slice::new(t, 0, blk), Slice::new(BUF_RECV, 0, blk), &have);
    b.build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coll::schedule::Kind;

    fn sends(s: &Schedule) -> Vec<u32> {
        s.nodes.iter().filter(|n| n.kind == Kind::Send).map(|n| n.peer).collect()
    }

    #[test]
    fn a_binomial_broadcast_reaches_every_rank_once() {
        for n in 1..=9u32 {
            for root in [0, n - 1, n / 2] {
                let mut reached = vec![0u32; n as usize];
                for r in 0..n {
                    for p in sends(&bcast_binomial(n, r, root, 8)) {
                        reached[p as usize] += 1;
                    }
                }
                reached[root as usize] += 1;
                assert!(reached.iter().all(|&c| c == 1), "n={n} root={root}: {reached:?}");
            }
        }
    }

    #[test]
    fn chunks_cover_the_buffer_in_whole_elements() {
        for (n, len, elem) in [(1, 0, 8), (3, 24, 8), (4, 40, 8), (8, 16, 8), (5, 1001, 1)] {
            let c = chunks(n, len, elem);
            assert_eq!(c.len(), n as usize);
            assert_eq!(c.iter().map(|x| x.1).sum::<u64>(), len, "{n} {len}");
            assert!(c.iter().all(|x| x.1 % elem == 0 || elem == 1));
            assert!(c.windows(2).all(|w| w[0].0 + w[0].1 == w[1].0));
        }
    }

    #[test]
    fn every_schedule_is_valid_for_one_to_nine_ranks() {
        for n in 1..=9u32 {
            let blocks: Vec<(u64, u64)> = (0..n as u64).map(|i| (i * 8, 8)).collect();
            for r in 0..n {
                let total = 8 * n as u64;
                for (s, sl, rl) in [
                    (barrier(n, r), 0, 0),
                    (bcast_binomial(n, r, n - 1, 8), 0, 8),
                    (reduce_binomial(n, r, n / 2, 8), 8, 8),
                    (allreduce_recursive_doubling(n, r, 8), 8, 8),
                    (gather_linear(n, r, 0, 8, &blocks), 8, total),
                    (scatter_linear(n, r, 0, 8, &blocks), total, 8),
                    (allgather_ring(n, r, &blocks), 8, total),
                    (alltoall_pairwise(n, r, &blocks, &blocks), total, total),
                    (scan_linear(n, r, 8, true), 8, 8),
                    (bcast_scatter_allgather(n, r, n / 2, 1001), 0, 1001),
                    (allreduce_ring(n, r, total, 8), total, total),
                    (reduce_scatter_block(n, r, 8), total, total + 8),
                    (alltoall_bruck(n, r, 8), total, total),
                    (bcast_pipeline(n, r, n - 1, 1001, 100), 0, 1001),
                    (allreduce_rabenseifner(n, r, total, 8), total, total),
                    (gather_binomial(n, r, n / 2, 8), 8, total),
                    (scatter_binomial(n, r, n / 2, 8), total, 8),
                ] {
                    s.validate(sl, rl, n).unwrap_or_else(|e| panic!("n={n} r={r}: {e}"));
                }
            }
        }
    }
}
