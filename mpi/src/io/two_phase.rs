//! Collective accesses in two phases (MPI 4.1 §14.4 leaves how to the
//! implementation; this is ROMIO's collective buffering, Thakur, Gropp
//! and Lusk, "Data Sieving and Collective I/O in ROMIO", 1999).
//!
//! A strided pattern written by every process piece by piece is many
//! small writes. Here the file range the call touches is cut into one
//! contiguous *domain* per aggregator (by default the first process of
//! each node: one per host off the simulator), and each domain into
//! rounds of at most `cb_buffer_size` bytes. In each round every process
//! sends each aggregator the pieces of its data that fall in that
//! aggregator's part of the round (one message, possibly empty), and each
//! aggregator writes what it received as few contiguous writes as the
//! pieces allow. Memory per aggregator is bounded by the round, whatever
//! the size of the access.
//!
//! Reads go the other way: each process sends each aggregator the file
//! ranges it wants from that aggregator's part of the round, the
//! aggregator reads the union of them as few contiguous reads as they
//! allow, and answers each process with its bytes.
//!
//! Used for `_all` accesses at an explicit offset or the individual
//! pointer in non-atomic mode (the atomic mode, shared and ordered
//! positions keep each process's own accesses; so do `external32` reads).
//! Hints (§14.2.8, ROMIO's names): `romio_cb_write` and `romio_cb_read`
//! (`disable` turns each off), `cb_nodes` (how many aggregators, spread
//! over the ranks), `cb_buffer_size` (bytes per aggregator per round,
//! 16 MiB by default, taken between 1 KiB and 1 GiB).

use std::borrow::Cow;

use super::{decode, encode, status, Direction, File, Position, Signature, Span, Status};
use crate::{Communicator, MpiError, Rank, Result};

/// The tag of the pieces on the file's private communicator (its
/// collective context: below `MPI_Intercomm_create`'s tags, apart from
/// the internal gathers').
const PIECES: i32 = 0x0EAD_0000;

/// `cb_buffer_size` unless a hint says otherwise.
const DEFAULT_BUFFER: u64 = 16 << 20;
/// The least `cb_buffer_size` taken: a hint of a few bytes would make a
/// round, and a message per process, of every few bytes.
const MIN_BUFFER: u64 = 1024;
/// The most: a round's buffer is allocated whole at an aggregator.
const MAX_BUFFER: u64 = 1 << 30;

/// A piece of a process's access: `(file offset, offset in its data,
/// length)`.
type Piece = (u64, u64, u64);

/// What one process contributes: its pieces sorted by file offset, and
/// the data.
struct Mine<'a> {
    pieces: Vec<Piece>,
    data: Cow<'a, [u8]>,
}

impl Mine<'_> {
    /// The file range `[lo, hi)` the pieces cover (`None`: no data).
    fn range(&self) -> Option<(u64, u64)> {
        let lo = self.pieces.first()?.0;
        let hi = self.pieces.iter().map(|&(at, _, n)| at + n).max()?;
        Some((lo, hi))
    }

    /// The message for file range `[a, b)`: the count of pieces, each
    /// `(offset, length)`, then their bytes.
    fn message(&self, a: u64, b: u64) -> Vec<u8> {
        let first = self.pieces.partition_point(|&(at, _, n)| at + n <= a);
        let mut head: Vec<(u64, u64)> = Vec::new();
        let mut body: Vec<&[u8]> = Vec::new();
        for &(at, off, n) in self.pieces[first..].iter().take_while(|&&(at, _, _)| at < b) {
            let s = at.max(a);
            let e = (at + n).min(b);
            if s < e {
                head.push((s, e - s));
                let from = (off + (s - at)) as usize;
                body.push(&self.data[from..from + (e - s) as usize]);
            }
        }
        let mut out = Vec::with_capacity(8 + head.len() * 16 + body.iter().map(|b| b.len()).sum::<usize>());
        out.extend((head.len() as u64).to_le_bytes());
        for (s, n) in &head {
            out.extend(s.to_le_bytes());
            out.extend(n.to_le_bytes());
        }
        for b in body {
            out.extend_from_slice(b);
        }
        out
    }
}

impl Mine<'_> {
    /// The parts of this process's pieces in file range `[a, b)`, each
    /// `(offset, length, piece index)`, the offset within the piece being
    /// `offset - piece's offset`.
    fn wanted(&self, a: u64, b: u64) -> Vec<(u64, u64, usize)> {
        let first = self.pieces.partition_point(|&(at, _, n)| at + n <= a);
        self.pieces[first..]
            .iter()
            .enumerate()
            .take_while(|(_, &(at, _, _))| at < b)
            .filter_map(|(i, &(at, _, n))| {
                let (s, e) = (at.max(a), (at + n).min(b));
                (s < e).then_some((s, e - s, first + i))
            })
            .collect()
    }
}

/// A read request: the count, then `(offset, length)` pairs.
fn request(wanted: &[(u64, u64, usize)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + 16 * wanted.len());
    out.extend((wanted.len() as u64).to_le_bytes());
    for &(at, n, _) in wanted {
        out.extend(at.to_le_bytes());
        out.extend(n.to_le_bytes());
    }
    out
}

fn parse_request(msg: &[u8]) -> Result<Vec<(u64, u64)>> {
    let bad = || MpiError::Corrupt { what: "a corrupt request of a collective read's exchange" };
    let words: Vec<u64> =
        msg.chunks(8).map(|c| c.try_into().map(u64::from_le_bytes).map_err(|_| bad())).collect::<Result<_>>()?;
    let (&count, pairs) = words.split_first().ok_or_else(bad)?;
    if pairs.len() as u64 != count.checked_mul(2).ok_or_else(bad)? {
        return Err(bad());
    }
    pairs.chunks(2).map(|p| p[0].checked_add(p[1]).map(|_| (p[0], p[1])).ok_or_else(bad)).collect()
}

/// A reply: each part's length, then the bytes.
fn reply_of(parts: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in parts {
        out.extend((p.len() as u64).to_le_bytes());
    }
    for p in parts {
        out.extend_from_slice(p);
    }
    out
}

/// The `count` parts of a reply, each the bytes of the part asked (fewer
/// at the end of the file).
fn parse_reply(msg: &[u8], count: usize) -> Result<Vec<&[u8]>> {
    let bad = || MpiError::Corrupt { what: "a corrupt reply of a collective read's exchange" };
    let mut body = count.checked_mul(8).ok_or_else(bad)?;
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        let len: [u8; 8] = msg.get(8 * i..8 * i + 8).and_then(|s| s.try_into().ok()).ok_or_else(bad)?;
        let len = usize::try_from(u64::from_le_bytes(len)).map_err(|_| bad())?;
        let end = body.checked_add(len).ok_or_else(bad)?;
        out.push(msg.get(body..end).ok_or_else(bad)?);
        body = end;
    }
    if body != msg.len() {
        return Err(bad());
    }
    Ok(out)
}

/// The pieces of a message, each `(offset, bytes)`, or why it is corrupt.
fn parse(msg: &[u8]) -> Result<Vec<(u64, &[u8])>> {
    let bad = || MpiError::Corrupt { what: "a corrupt message of a collective write's exchange" };
    let word = |at: usize| -> Result<u64> {
        let b: [u8; 8] = msg.get(at..at + 8).and_then(|s| s.try_into().ok()).ok_or_else(bad)?;
        Ok(u64::from_le_bytes(b))
    };
    let count = usize::try_from(word(0)?).map_err(|_| bad())?;
    let mut body = count.checked_mul(16).and_then(|h| h.checked_add(8)).ok_or_else(bad)?;
    let mut out = Vec::with_capacity(count.min(msg.len() / 16));
    for i in 0..count {
        let (at, n) = (word(8 + 16 * i)?, usize::try_from(word(16 + 16 * i)?).map_err(|_| bad())?);
        let end = body.checked_add(n).ok_or_else(bad)?;
        out.push((at, msg.get(body..end).ok_or_else(bad)?));
        body = end;
    }
    if body != msg.len() {
        return Err(bad());
    }
    Ok(out)
}

/// This process in the rounds of a plan.
struct Round {
    me: Rank,
    n: Rank,
    aggregator: bool,
}

/// Who aggregates, the domains and the rounds: the same at every process.
struct Plan {
    lo: u64,
    hi: u64,
    aggregators: Vec<Rank>,
    domain: u64,
    buffer: u64,
}

impl Plan {
    fn rounds(&self) -> u64 {
        self.domain.div_ceil(self.buffer)
    }

    /// Aggregator `k`'s part of round `r`, `[a, b)` (empty when `a >= b`).
    fn part(&self, k: usize, r: u64) -> (u64, u64) {
        let start = self.lo + k as u64 * self.domain;
        let end = (start + self.domain).min(self.hi);
        let a = start + r * self.buffer;
        (a.min(end), (a + self.buffer).min(end))
    }
}

impl File {
    /// Whether a collective write goes through the aggregators (see the
    /// module's comment); the same answer at every process.
    pub(super) fn two_phase(&self, position: Position, direction: Direction) -> bool {
        let hint = match direction {
            Direction::Write => "romio_cb_write",
            Direction::Read => "romio_cb_read",
        };
        let converted_read = direction == Direction::Read && *self.view.rep() == super::DataRep::External32;
        !self.atomic
            && !converted_read
            && matches!(position, Position::At(_) | Position::Individual)
            && self.comm.size() > 1
            && !matches!(self.info.get(hint), Ok(Some("disable")))
    }

    /// A hint as a positive number, if given and one.
    fn hint(&self, key: &str) -> Option<u64> {
        self.info.get(key).ok().flatten()?.trim().parse().ok().filter(|n| *n > 0)
    }

    /// A collective write through the aggregators. Every process takes
    /// part in every exchange whatever fails where, so that none waits for
    /// ever; a failure anywhere fails the call everywhere.
    ///
    /// # Safety
    /// Every block of the span's elements at `buf` is readable, and not modified, for the
    /// duration of the call.
    pub(super) unsafe fn write_two_phase(
        &mut self,
        position: Position,
        buf: *mut u8,
        span: &Span,
        signature: Option<&Signature>,
    ) -> Result<Status> {
        // SAFETY: the span's elements at `buf` are readable and unmodified for this call (`# Safety`),
        // and `local`, borrowing them when direct, is used only within it.
        let local = unsafe { self.contribution(position, buf, span, signature) };
        let (start, mine, plan) = self.agree_on_plan(local)?;
        let len = mine.data.len() as u64;
        if let Some(plan) = plan {
            let failure = self.exchange_and_write(&plan, &mine)?;
            let mine: Result<()> = failure.map_or(Ok(()), Err);
            super::agree(&self.comm, mine)?;
        }
        if position == Position::Individual {
            self.pointer = start + len / self.view.etype_size();
        }
        Ok(status(len))
    }

    /// Everyone's file range and node, or the first process's error: the
    /// plan (none when nobody moves a byte). Collective.
    fn agree_on_plan<'a>(&self, local: Result<(u64, Mine<'a>)>) -> Result<(u64, Mine<'a>, Option<Plan>)> {
        let node = self.comm.shared().borrow_mut().engine()?.node().map_or(u64::MAX, u64::from);
        let word: Vec<u8> = match &local {
            Ok((_, mine)) => {
                let (lo, hi) = mine.range().unwrap_or((u64::MAX, 0));
                [lo, hi, node].iter().flat_map(|w| w.to_le_bytes()).collect()
            }
            Err(e) => encode(e),
        };
        let all = self.comm.allgather_bytes(&word)?;
        let (start, mine) = local?;
        let mut ranges = Vec::with_capacity(all.len());
        for (r, w) in all.iter().enumerate() {
            match w.len() {
                24 => ranges.push(std::array::from_fn::<u64, 3, _>(|i| {
                    u64::from_le_bytes(w[8 * i..8 * i + 8].try_into().unwrap_or_default())
                })),
                _ => return Err(decode(w, r as i32)),
            }
        }
        let lo = ranges.iter().map(|r| r[0]).min().unwrap_or(u64::MAX);
        let hi = ranges.iter().map(|r| r[1]).max().unwrap_or(0);
        let plan = (lo < hi).then(|| self.plan(lo, hi, &ranges));
        Ok((start, mine, plan))
    }

    /// A collective read through the aggregators (see the module's
    /// comment); as [`File::write_two_phase`] for failures.
    ///
    /// # Safety
    /// Every block of the span's elements at `buf` is writable, and not otherwise accessed, for
    /// the duration of the call.
    pub(super) unsafe fn read_two_phase(&mut self, position: Position, buf: *mut u8, span: &Span) -> Result<Status> {
        // SAFETY: the span's elements at `buf` are writable and untouched for this call (`# Safety`),
        // and `inc` is finished (or dropped, on an error) before it returns: what `incoming` asks.
        let inc = unsafe { super::incoming(buf, span, "file read", false) };
        let local = inc.and_then(|mut inc| {
            let etypes = self.check_access(position, Direction::Read, span, None)?;
            let (start, pieces) = self.pieces(position, etypes)?;
            // SAFETY: `inc`'s bytes are the caller's span, writable and untouched for this call
            // (`# Safety`), or the staging buffer `inc` owns, whose heap bytes stay put as `inc`
            // moves; `out` is their only user until `finish`.
            let out = unsafe { inc.bytes() };
            Ok((start, Mine { pieces, data: Cow::Borrowed(&[]) }, inc, out))
        });
        // The plan needs the pieces only; the buffer comes back after.
        let (local, rest) = match local {
            Ok((start, mine, inc, out)) => (Ok((start, mine)), Some((inc, out))),
            Err(e) => (Err(e), None),
        };
        let (start, mine, plan) = self.agree_on_plan(local)?;
        let Some((inc, out)) = rest else {
            return Err(MpiError::Internal { what: "a collective read without its buffer".into() });
        };
        let mut got = vec![0u64; mine.pieces.len()];
        if let Some(plan) = plan {
            let failure = self.exchange_and_read(&plan, &mine, out, &mut got)?;
            super::agree(&self.comm, failure.map_or(Ok(()), Err))?;
        }
        // The data stream's bytes up to the first piece the file did not
        // hold whole (the end of the file), as an independent read counts.
        let mut by_data: Vec<(u64, u64, u64)> =
            mine.pieces.iter().zip(&got).map(|(&(_, off, n), &g)| (off, n, g)).collect();
        by_data.sort_by_key(|p| p.0);
        let mut moved = 0u64;
        for (_, n, g) in by_data {
            moved += g;
            if g < n {
                break;
            }
        }
        // SAFETY: the exchange that wrote `out` is over, and the span's elements at `buf` are still
        // writable and untouched within this call (`# Safety`).
        unsafe { inc.finish(moved) };
        if position == Position::Individual {
            self.pointer = start + moved / self.view.etype_size();
        }
        Ok(status(moved))
    }

    /// The rounds of a read: ask each aggregator for this process's ranges
    /// in its part, and, at an aggregator, read the union and answer. The
    /// bytes go to `out` at each piece's data offset; `got[i]` counts those
    /// piece `i` received. The first failure here, if any.
    fn exchange_and_read(
        &self,
        plan: &Plan,
        mine: &Mine<'_>,
        out: &mut [u8],
        got: &mut [u64],
    ) -> Result<Option<MpiError>> {
        let Round { me, n, aggregator } = self.round(plan);
        let mut failure = None;
        let (mut ops, mut bytes) = (0u64, 0u64);
        for round in 0..plan.rounds() {
            // Phase 1: the requests, `(offset, length)` pairs (no data).
            let mut sends = Vec::new();
            let mut own = Vec::new();
            let mut asked: Vec<Vec<(u64, u64, usize)>> = Vec::with_capacity(plan.aggregators.len());
            for (k, &agg) in plan.aggregators.iter().enumerate() {
                let (a, b) = plan.part(k, round);
                let wanted = mine.wanted(a, b);
                let msg = request(&wanted);
                asked.push(wanted);
                if agg == me {
                    own = msg;
                } else {
                    sends.push(self.post(agg, PIECES, msg)?);
                }
            }
            // Phase 2, at an aggregator: read what was asked, answer.
            let mut own_reply = Vec::new();
            if aggregator {
                let mut requests: Vec<Vec<(u64, u64)>> = Vec::with_capacity(n as usize);
                for r in 0..n {
                    let msg = if r == me { std::mem::take(&mut own) } else { self.comm.coll_recv(r, PIECES)? };
                    requests.push(parse_request(&msg)?);
                }
                let (replies, o, b) = match self.read_for(&requests) {
                    Ok(x) => x,
                    Err(e) => {
                        failure.get_or_insert(e);
                        (requests.iter().map(|q| reply_of(&vec![Vec::new(); q.len()])).collect(), 0, 0)
                    }
                };
                ops += o;
                bytes += b;
                for (r, reply) in replies.into_iter().enumerate() {
                    if r as Rank == me {
                        own_reply = reply;
                    } else {
                        sends.push(self.post(r as Rank, PIECES + 1, reply)?);
                    }
                }
            }
            // Phase 3: the answers, into place.
            for (k, &agg) in plan.aggregators.iter().enumerate() {
                let reply =
                    if agg == me { std::mem::take(&mut own_reply) } else { self.comm.coll_recv(agg, PIECES + 1)? };
                let pieces = parse_reply(&reply, asked[k].len())?;
                for (&(s, n, piece), data) in asked[k].iter().zip(pieces) {
                    let (at, off, _) = mine.pieces[piece];
                    if data.len() as u64 > n {
                        return Err(MpiError::Corrupt { what: "a collective read's reply is longer than asked" });
                    }
                    let to = (off + (s - at)) as usize;
                    out.get_mut(to..to + data.len())
                        .ok_or(MpiError::Corrupt { what: "a collective read's reply lands past the buffer" })?
                        .copy_from_slice(data);
                    got[piece] += data.len() as u64;
                }
            }
            self.comm.shared().borrow_mut().engine()?.wait_all(&sends)?;
        }
        self.charge(ops, bytes)?;
        Ok(failure)
    }

    /// Read, for each process, the ranges it asked for: the union of them
    /// all in as few reads as they allow. The replies, the reads, the bytes.
    fn read_for(&self, requests: &[Vec<(u64, u64)>]) -> Result<(Vec<Vec<u8>>, u64, u64)> {
        let mut all: Vec<(u64, u64)> = requests.iter().flatten().copied().collect();
        all.sort();
        let mut runs: Vec<(u64, u64)> = Vec::new();
        for (at, n) in all {
            match runs.last_mut() {
                Some((o, l)) if at <= *o + *l => *l = (*l).max(at + n - *o),
                _ => runs.push((at, n)),
            }
        }
        let mut data: Vec<Vec<u8>> = Vec::with_capacity(runs.len());
        let mut bytes = 0u64;
        for &(at, n) in &runs {
            let mut buf = crate::datatype::zeroed_buffer(n as usize, "a collective read's buffer")?;
            let got = self.read_segments(&[(at, n)], &mut buf)?;
            buf.truncate(got as usize);
            bytes += got;
            data.push(buf);
        }
        let replies = requests
            .iter()
            .map(|q| {
                let parts: Vec<Vec<u8>> = q
                    .iter()
                    .map(|&(at, n)| {
                        let i = runs.partition_point(|&(o, l)| o + l <= at);
                        let (o, _) = runs[i.min(runs.len() - 1)];
                        let have = &data[i.min(runs.len() - 1)];
                        let from = ((at - o) as usize).min(have.len());
                        let to = ((at - o + n) as usize).min(have.len());
                        have[from..to].to_vec()
                    })
                    .collect();
                reply_of(&parts)
            })
            .collect();
        Ok((replies, runs.len() as u64, bytes))
    }

    /// This process's part: where it starts (etypes) and its pieces.
    ///
    /// # Safety
    /// Every block of the span's elements at `buf` is readable, and not modified, for as long as
    /// the returned `Mine` (of the lifetime `'a` chosen) is used: its data borrows them when the
    /// span is direct.
    unsafe fn contribution<'a>(
        &self,
        position: Position,
        buf: *mut u8,
        span: &Span,
        signature: Option<&Signature>,
    ) -> Result<(u64, Mine<'a>)> {
        let etypes = self.check_access(position, Direction::Write, span, signature)?;
        let (start, pieces) = self.pieces(position, etypes)?;
        let len = etypes * self.view.etype_size();
        // SAFETY: the span's elements at `buf` are readable and unmodified for as long as the returned
        // `Mine`, which borrows them for `'a` when direct, is used (`# Safety`).
        let data = unsafe { super::outgoing(buf, span, "file write")? };
        let data = match (self.view.rep(), signature) {
            (super::DataRep::External32, Some(sig)) => Cow::Owned(sig.to_external(&data, super::elements(sig, len))?),
            _ => data,
        };
        Ok((start, Mine { pieces, data }))
    }

    /// The aggregators and domains for file range `[lo, hi)`, from every
    /// process's `[lo, hi, node]`.
    fn plan(&self, lo: u64, hi: u64, ranges: &[[u64; 3]]) -> Plan {
        let n = ranges.len();
        let aggregators: Vec<Rank> = match self.hint("cb_nodes") {
            Some(k) => {
                let k = k.min(n as u64) as usize;
                (0..k).map(|i| (i * n / k) as Rank).collect()
            }
            // The first process of each node, in rank order.
            None => {
                let mut seen = std::collections::HashSet::new();
                (0..n).filter(|&r| seen.insert(ranges[r][2])).map(|r| r as Rank).collect()
            }
        };
        // Domains on 4 KiB boundaries, so that no two aggregators share a page.
        let domain = (hi - lo).div_ceil(aggregators.len() as u64).next_multiple_of(4096);
        Plan {
            lo,
            hi,
            aggregators,
            domain,
            buffer: self.hint("cb_buffer_size").unwrap_or(DEFAULT_BUFFER).clamp(MIN_BUFFER, MAX_BUFFER),
        }
    }

    /// Who this process is in the rounds of `plan`.
    fn round(&self, plan: &Plan) -> Round {
        let me = self.comm.rank();
        Round { me, n: self.comm.size(), aggregator: plan.aggregators.contains(&me) }
    }

    /// Start sending `msg` to rank `to` of the file's group, tagged `tag`
    /// on its collective context; waited for at the end of the round.
    fn post(&self, to: Rank, tag: i32, msg: Vec<u8>) -> Result<adi::ReqId> {
        let dest = self.comm.job_rank(to)?;
        let ctx = self.comm.ctx() + 1;
        Ok(self.comm.shared().borrow_mut().engine()?.isend(dest, tag, ctx, msg, false)?)
    }

    /// The file pieces of `etypes` etypes of the view from `position`,
    /// each `(file offset, offset in the data, length)`, sorted by file
    /// offset (a filetype's displacements never decrease, §14.3, so they
    /// are already; the stable sort keeps ties in data order), and where
    /// the access starts (etypes).
    fn pieces(&self, position: Position, etypes: u64) -> Result<(u64, Vec<Piece>)> {
        let start = match position {
            Position::At(o) => o,
            _ => self.pointer,
        };
        let esize = self.view.etype_size();
        let pos = start.checked_mul(esize).ok_or(crate::error::Overflow::Offset { value: start })?;
        let segments = self.view.segments(pos, etypes * esize)?;
        let mut pieces = Vec::with_capacity(segments.len());
        let mut off = 0u64;
        for (at, n) in segments {
            pieces.push((at, off, n));
            off += n;
        }
        pieces.sort_by_key(|p| p.0);
        Ok((start, pieces))
    }

    /// The rounds: send each aggregator its pieces, and, at an aggregator,
    /// write what came. The first write failure here, if any (the call
    /// goes on to the end regardless, so that nobody waits for ever).
    fn exchange_and_write(&self, plan: &Plan, mine: &Mine<'_>) -> Result<Option<MpiError>> {
        let Round { me, n, aggregator } = self.round(plan);
        let mut failure = None;
        let (mut ops, mut bytes) = (0u64, 0u64);
        for round in 0..plan.rounds() {
            let mut sends = Vec::with_capacity(plan.aggregators.len());
            let mut own = Vec::new();
            for (k, &agg) in plan.aggregators.iter().enumerate() {
                let (a, b) = plan.part(k, round);
                let msg = mine.message(a, b);
                if agg == me {
                    own = msg;
                } else {
                    sends.push(self.post(agg, PIECES, msg)?);
                }
            }
            if aggregator {
                let mut got: Vec<Vec<u8>> = Vec::with_capacity(n as usize);
                for r in 0..n {
                    if r == me {
                        got.push(std::mem::take(&mut own));
                    } else {
                        got.push(self.comm.coll_recv(r, PIECES)?);
                    }
                }
                match self.write_pieces(&got) {
                    Ok((o, b)) => {
                        ops += o;
                        bytes += b;
                    }
                    Err(e) => {
                        failure.get_or_insert(e);
                    }
                }
            }
            self.comm.shared().borrow_mut().engine()?.wait_all(&sends)?;
        }
        self.charge(ops, bytes)?;
        Ok(failure)
    }

    /// Write the pieces of one round's messages, adjacent ones as one
    /// write: how many writes, and the bytes.
    fn write_pieces(&self, messages: &[Vec<u8>]) -> Result<(u64, u64)> {
        let mut pieces: Vec<(u64, &[u8])> = Vec::new();
        for m in messages {
            pieces.extend(parse(m)?);
        }
        pieces.sort_by_key(|p| p.0);
        let (mut ops, mut bytes) = (0u64, 0u64);
        let mut run: Vec<u8> = Vec::new();
        let mut run_at = 0u64;
        let mut flush = |run: &mut Vec<u8>, at: u64| -> Result<()> {
            if run.is_empty() {
                return Ok(());
            }
            self.write_segments(&[(at, run.len() as u64)], run)?;
            ops += 1;
            bytes += run.len() as u64;
            run.clear();
            Ok(())
        };
        for (at, data) in pieces {
            if run.is_empty() || at != run_at + run.len() as u64 {
                flush(&mut run, run_at)?;
                run_at = at;
            }
            run.extend_from_slice(data);
        }
        flush(&mut run, run_at)?;
        Ok((ops, bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cut_at_a_range_and_come_back_whole() {
        let data: Vec<u8> = (0..40u8).collect();
        let mine = Mine { pieces: vec![(100, 0, 10), (120, 10, 10), (200, 20, 20)], data: Cow::Borrowed(&data) };
        assert_eq!(mine.range(), Some((100, 220)));
        let m = mine.message(105, 210);
        let p = parse(&m).unwrap();
        assert_eq!(p.iter().map(|(at, d)| (*at, d.len())).collect::<Vec<_>>(), [(105, 5), (120, 10), (200, 10)]);
        assert_eq!(p[0].1, &data[5..10]);
        assert_eq!(p[2].1, &data[20..30]);
        assert!(parse(&mine.message(0, 100)).unwrap().is_empty());
        // Corrupt messages are refused, never read past.
        for cut in 0..m.len() {
            assert!(parse(&m[..cut]).is_err(), "cut at {cut}");
        }
        let mut huge = m.clone();
        huge[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(parse(&huge).is_err());
    }

    #[test]
    fn read_requests_and_replies_round_trip_and_refuse_corruption() {
        let mine = Mine { pieces: vec![(100, 0, 10), (120, 10, 10)], data: Cow::Borrowed(&[]) };
        let wanted = mine.wanted(105, 125);
        assert_eq!(wanted, [(105, 5, 0), (120, 5, 1)]);
        let req = request(&wanted);
        assert_eq!(parse_request(&req).unwrap(), [(105, 5), (120, 5)]);
        for cut in 0..req.len() {
            assert!(parse_request(&req[..cut]).is_err(), "request cut at {cut}");
        }
        let reply = reply_of(&[vec![1, 2, 3, 4, 5], vec![6, 7]]);
        let parts = parse_reply(&reply, 2).unwrap();
        assert_eq!(parts, [&[1u8, 2, 3, 4, 5][..], &[6, 7][..]]);
        for cut in 0..reply.len() {
            assert!(parse_reply(&reply[..cut], 2).is_err(), "reply cut at {cut}");
        }
        assert!(parse_reply(&reply, 3).is_err());
    }

    #[test]
    fn domains_cover_the_range_once() {
        let plan = Plan { lo: 1000, hi: 1000 + 3 * 8192 + 5, aggregators: vec![0, 3, 6], domain: 12288, buffer: 5000 };
        let mut covered = Vec::new();
        for k in 0..3 {
            for r in 0..plan.rounds() {
                let (a, b) = plan.part(k, r);
                if a < b {
                    covered.push((a, b));
                }
            }
        }
        covered.sort();
        assert_eq!(covered.first().map(|c| c.0), Some(plan.lo));
        assert_eq!(covered.last().map(|c| c.1), Some(plan.hi));
        assert!(covered.windows(2).all(|w| w[0].1 == w[1].0), "{covered:?}");
    }
}
