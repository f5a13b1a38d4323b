//! MPI-IO through the Rust API (`mpi::io`, MPI 4.1 chapter 14): each rank
//! writes its block at an explicit offset, reads everyone's back, appends
//! in rank order through the shared pointer, and reports the simulated
//! time of one access, which the profile's `io_op_ns` and
//! `io_ns_per_byte` determine exactly.

use mpi::info::Info;
use mpi::io::{Access, AccessMode, File, Position};
use mpi::traits::*;
use mpi::{SimpleCommunicator, Universe};

use crate::{e, R};

/// `mpi-suite io DIR`.
pub(crate) fn io(u: &Universe, w: &SimpleCommunicator, dir: &str) -> R {
    let (me, n) = (w.rank() as u64, w.size() as u64);
    let path = format!("{dir}/mpi-suite-io.dat");
    let mut f = File::open(w, &path, AccessMode::new(Access::ReadWrite).create(), &Info::new()).map_err(e)?;
    const EACH: usize = 1024;
    let mine: Vec<u64> = (0..EACH as u64).map(|i| me << 32 | i).collect();
    f.set_size(0).map_err(e)?;
    let t0 = u.wtime();
    let s = f.write_at(me * EACH as u64 * 8, &mine).map_err(e)?;
    let took = u.wtime() - t0;
    if s.bytes() != (EACH * 8) as u64 {
        return Err(format!("rank {me}: wrote {} bytes", s.bytes()));
    }
    w.barrier().map_err(e)?;
    let mut all = vec![0u64; EACH * n as usize];
    let s = f.read_at_all(0, &mut all).map_err(e)?;
    if s.bytes() != (all.len() * 8) as u64 {
        return Err(format!("rank {me}: read {} bytes of {}", s.bytes(), all.len() * 8));
    }
    for (k, v) in all.iter().enumerate() {
        let want = ((k / EACH) as u64) << 32 | (k % EACH) as u64;
        if *v != want {
            return Err(format!("rank {me}: word {k} is {v:#x}, not {want:#x}"));
        }
    }
    // Rank r appends r + 1 words after everything, in rank order.
    f.seek_shared(0, mpi::io::Whence::End).map_err(e)?;
    let tail: Vec<u64> = vec![me + 100; me as usize + 1];
    f.write_ordered(&tail).map_err(e)?;
    w.barrier().map_err(e)?;
    if me == 0 {
        let total = n * (n + 1) / 2;
        let mut back = vec![0u64; total as usize];
        f.read_into(Position::At(EACH as u64 * 8 * n), &mut back).map_err(e)?;
        let want: Vec<u64> = (0..n).flat_map(|r| std::iter::repeat_n(r + 100, r as usize + 1)).collect();
        if back != want {
            return Err(format!("ordered tail {back:?}, not {want:?}"));
        }
        println!("io: one {}-byte write_at took {:.3} us simulated", EACH * 8, took * 1e6);
    }
    f.close().map_err(e)?;
    if me == 0 {
        File::delete(&path).map_err(e)?;
    }
    Ok(())
}

/// `mpi-suite io-collective DIR`: collective buffering (two-phase I/O).
/// Every rank owns every `n`-th block of 256 bytes through a strided
/// view, 16 blocks each, and writes them with one `write_all`; the file is
/// checked byte for byte. With aggregation, the aggregators (the first rank
/// of each node, or those `cb_nodes` names) make every write and the others
/// none; with `romio_cb_write=disable` each rank writes its 16 blocks
/// itself.
pub(crate) fn collective(w: &SimpleCommunicator, dir: &str) -> R {
    use mpi::datatype::UserDatatype;
    use mpi::io::{DataRep, View};
    const BLOCK: usize = 256;
    const BLOCKS: usize = 16;
    let (me, n) = (w.rank() as usize, w.size() as usize);
    let path = format!("{dir}/mpi-suite-io-collective.dat");
    let byte = UserDatatype::of::<u8>();
    let tile = UserDatatype::contiguous(BLOCK, &byte).map_err(e)?.resized(0, (n * BLOCK) as isize).map_err(e)?;
    let mine: Vec<u8> = (0..BLOCK * BLOCKS).map(|i| (me * 31 + i / BLOCK * 7 + i) as u8).collect();
    let expect = |k: usize| {
        let (b, within) = (k / BLOCK, k % BLOCK);
        let (owner, nth) = (b % n, b / n);
        (owner * 31 + nth * 7 + nth * BLOCK + within) as u8
    };
    let mut report = Vec::new();
    for hints in [vec![], vec![("romio_cb_write", "disable")], vec![("cb_nodes", "2"), ("cb_buffer_size", "1024")]] {
        let mut info = Info::new();
        for (k, v) in &hints {
            info.set(k, v).map_err(e)?;
        }
        let mut f = File::open(w, &path, AccessMode::new(Access::ReadWrite).create(), &info).map_err(e)?;
        f.set_size(0).map_err(e)?;
        let view = View::new((me * BLOCK) as u64, byte.typemap().clone(), tile.typemap().clone(), DataRep::Native)
            .map_err(e)?;
        f.set_view(view).map_err(e)?;
        let s = f.write_all(&mine).map_err(e)?;
        if s.bytes() != mine.len() as u64 {
            return Err(format!("rank {me} {hints:?}: wrote {} bytes", s.bytes()));
        }
        let writes = f.writes();
        // Read back through the view, a block more than was written: the
        // status stops at the end of the file.
        let mut back = vec![0u8; mine.len() + BLOCK];
        let s = f.read_at_all(0, &mut back).map_err(e)?;
        if s.bytes() != mine.len() as u64 || back[..mine.len()] != mine[..] {
            return Err(format!("rank {me} {hints:?}: read back {} bytes, or other bytes than written", s.bytes()));
        }
        let reads = f.reads();
        f.close().map_err(e)?;
        w.barrier().map_err(e)?;
        if me == 0 {
            let got = std::fs::read(&path).map_err(e)?;
            if got.len() != n * BLOCK * BLOCKS {
                return Err(format!("{hints:?}: the file has {} bytes, not {}", got.len(), n * BLOCK * BLOCKS));
            }
            if let Some(k) = (0..got.len()).find(|&k| got[k] != expect(k)) {
                return Err(format!("{hints:?}: byte {k} is {}, not {}", got[k], expect(k)));
            }
        }
        let mut all = vec![0u64; n];
        w.all_gather_into(&writes, &mut all[..]).map_err(e)?;
        report.push(format!("{hints:?}: writes {all:?}"));
        let total = (n * BLOCK * BLOCKS) as u64;
        // With cb_nodes=2 and cb_buffer_size=1024: ranks i·n/2 aggregate
        // halves of the range (4 KiB-aligned), one access per round of
        // 1,024 bytes.
        let rounds = |range: u64| {
            let aggs = 2.min(n);
            let domain = range.div_ceil(aggs as u64).next_multiple_of(4096);
            let mut want = vec![0u64; n];
            for k in 0..aggs {
                want[k * n / aggs] = range.saturating_sub(k as u64 * domain).min(domain).div_ceil(1024);
            }
            want
        };
        let ok = match hints.len() {
            // Each rank its own blocks, none adjacent to another of its own.
            1 => all.iter().all(|&k| k == BLOCKS as u64),
            // One write per aggregator (the first rank of each node): rank 0
            // is one, and the others write nothing or once.
            0 => all[0] == 1 && all.iter().all(|&k| k <= 1),
            _ => all == rounds(total),
        };
        if !ok {
            return Err(format!("rank {me} {hints:?}: the ranks made {all:?} writes"));
        }
        // The reads are aggregated in every case (only writes are disabled
        // by the second), over the range read: a block per rank more.
        let mut all_reads = vec![0u64; n];
        w.all_gather_into(&reads, &mut all_reads[..]).map_err(e)?;
        report.push(format!("{hints:?}: reads {all_reads:?}"));
        let reads_ok = match hints.len() {
            2 => all_reads == rounds(total + (n * BLOCK) as u64),
            _ => all_reads[0] == 1 && all_reads.iter().all(|&k| k <= 1),
        };
        if !reads_ok {
            return Err(format!("rank {me} {hints:?}: the ranks made {all_reads:?} reads"));
        }
        w.barrier().map_err(e)?;
    }
    if me == 0 {
        let _ = std::fs::remove_file(&path);
        for r in report {
            println!("{r}");
        }
        println!("OK io-collective");
    }
    Ok(())
}

/// `mpi-suite io-queue DIR K`: the ranks of a node queue for its storage
/// in simulated time. Rank 0 writes 1 MiB alone (the service time of one
/// access), then every rank writes 1 MiB at once; with `K` ranks on the
/// busiest node the slowest takes about `K` services (a waiting rank
/// ends after those queued before it), and the file is right.
pub(crate) fn queue(u: &Universe, w: &SimpleCommunicator, dir: &str, k: f64) -> R {
    const MIB: usize = 1 << 20;
    let me = w.rank() as usize;
    let path = format!("{dir}/mpi-suite-io-queue.dat");
    let mut f = File::open(w, &path, AccessMode::new(Access::ReadWrite).create(), &Info::new()).map_err(e)?;
    let mine = vec![me as u8 + 1; MIB];
    w.barrier().map_err(e)?;
    let mut single = 0.0;
    if me == 0 {
        let t0 = u.wtime();
        f.write_at(0, &mine).map_err(e)?;
        single = u.wtime() - t0;
    }
    w.barrier().map_err(e)?;
    let t0 = u.wtime();
    f.write_at((me * MIB) as u64, &mine).map_err(e)?;
    let took = u.wtime() - t0;
    let mut all = vec![0f64; w.size() as usize];
    w.all_gather_into(&took, &mut all[..]).map_err(e)?;
    f.close().map_err(e)?;
    w.barrier().map_err(e)?;
    if me == 0 {
        let got = std::fs::read(&path).map_err(e)?;
        let _ = std::fs::remove_file(&path);
        if let Some(at) = (0..got.len()).find(|&i| got[i] != (i / MIB) as u8 + 1) {
            return Err(format!("byte {at} of the file is {}", got[at]));
        }
        let slowest = all.iter().cloned().fold(0.0, f64::max);
        println!(
            "io-queue: one access {:.3} us alone; at once, the slowest {:.3} us ({:.2} accesses)",
            single * 1e6,
            slowest * 1e6,
            slowest / single
        );
        if !(slowest >= single * (k - 0.01) && slowest <= single * (k + 0.05)) {
            return Err(format!(
                "the slowest of the accesses made at once took {slowest} s, not about {k} x {single} s"
            ));
        }
        println!("OK io-queue");
    }
    Ok(())
}

/// A data representation that stores `u32`s big-endian (§14.5.3, through
/// the Rust API's [`mpi::io::Conversion`]); `fail` makes its writes fail.
struct BigEndian<'a> {
    data: std::cell::RefCell<&'a mut [u32]>,
    fail: bool,
}

impl mpi::io::Conversion for BigEndian<'_> {
    fn whole_items(&self, bytes: u64) -> (u64, u64) {
        (bytes / 4, bytes / 4 * 4)
    }
    fn encode(&self, file: &mut [u8], items: u64, position: u64) -> mpi::Result<()> {
        if self.fail {
            return Err(mpi::MpiError::Conversion(mpi::ConversionError::Failed {
                why: "this rank's conversion fails on purpose".into(),
            }));
        }
        let data = self.data.borrow();
        for (i, out) in file.chunks_exact_mut(4).take(items as usize).enumerate() {
            out.copy_from_slice(&data[position as usize + i].to_be_bytes());
        }
        Ok(())
    }
    fn decode(&self, file: &[u8], items: u64, position: u64) -> mpi::Result<()> {
        let mut data = self.data.borrow_mut();
        for (i, b) in file.chunks_exact(4).take(items as usize).enumerate() {
            data[position as usize + i] = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        }
        Ok(())
    }
}

/// `mpi-suite io-convert DIR`: every rank writes its `u32`s collectively
/// through a big-endian conversion, finds them big-endian in the file and
/// reads them back through it; then the last rank's conversion fails in a
/// collective write, which fails there only (`MPI_ERR_CONVERSION`) and
/// leaves nobody waiting, and so does a length that ends inside an item in
/// a collective read.
pub(crate) fn convert(w: &SimpleCommunicator, dir: &str) -> R {
    use mpi::io::{Calling, Direction};
    const EACH: usize = 64;
    let (me, n) = (w.rank() as usize, w.size() as usize);
    let path = format!("{dir}/mpi-suite-io-convert.dat");
    let mut f = File::open(w, &path, AccessMode::new(Access::ReadWrite).create(), &Info::new()).map_err(e)?;
    f.set_size(0).map_err(e)?;
    let mut mine: Vec<u32> = (0..EACH as u32).map(|i| (me as u32) << 16 | i).collect();
    let expect = mine.clone();
    let at = Position::At((me * EACH * 4) as u64);
    let conv = BigEndian { data: std::cell::RefCell::new(&mut mine), fail: false };
    let s = f.access_converted(at, Direction::Write, EACH * 4, &conv, Calling::Together).map_err(e)?;
    if s.bytes() != (EACH * 4) as u64 {
        return Err(format!("rank {me}: wrote {} bytes", s.bytes()));
    }
    w.barrier().map_err(e)?;
    let mut raw = vec![0u8; EACH * 4];
    f.read_at((me * EACH * 4) as u64, &mut raw).map_err(e)?;
    if raw[..4] != expect[0].to_be_bytes() || raw[4 * (EACH - 1)..] != expect[EACH - 1].to_be_bytes() {
        return Err(format!("rank {me}: the file does not hold its numbers big-endian: {:?}", &raw[..8]));
    }
    let mut back = vec![0u32; EACH];
    let conv = BigEndian { data: std::cell::RefCell::new(&mut back), fail: false };
    f.access_converted(at, Direction::Read, EACH * 4, &conv, Calling::Alone).map_err(e)?;
    if back != expect {
        return Err(format!("rank {me}: read back other numbers through the conversion"));
    }
    let last = me == n - 1;
    let conv = BigEndian { data: std::cell::RefCell::new(&mut mine), fail: last };
    match (f.access_converted(at, Direction::Write, EACH * 4, &conv, Calling::Together), last) {
        (Err(mpi::MpiError::Conversion(_)), true) | (Ok(_), false) => {}
        (other, _) => {
            return Err(format!("rank {me}: a write beside the last rank's failed conversion gave {other:?}"))
        }
    }
    // A length that ends inside an item, at the last rank only: refused
    // there, and the others' collective read ends.
    let len = if last { EACH * 4 - 2 } else { EACH * 4 };
    let conv = BigEndian { data: std::cell::RefCell::new(&mut back), fail: false };
    match (f.access_converted(at, Direction::Read, len, &conv, Calling::Together), last) {
        (Err(mpi::MpiError::View(mpi::io::ViewError::PartialItem { .. })), true) | (Ok(_), false) => {}
        (other, _) => return Err(format!("rank {me}: a read beside the last rank's ragged length gave {other:?}")),
    }
    f.close().map_err(e)?;
    w.barrier().map_err(e)?;
    if me == 0 {
        File::delete(&path).map_err(e)?;
        println!("OK io-convert on {n} ranks");
    }
    Ok(())
}
