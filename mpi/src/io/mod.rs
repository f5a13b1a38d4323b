//! Parallel file I/O (MPI 4.1 chapter 14): files opened by the processes
//! of a communicator together, each process seeing the file through its
//! own view, with explicit offsets, an individual file pointer per
//! process and a pointer the processes share.
//!
//! Data moves between the caller's elements and the file through the
//! same typemaps as messages: elements are packed into (or unpacked from)
//! the bytes of the view's data stream, and [`View::segments`] places
//! those bytes in the file. Every backend does real I/O on the file
//! system the processes share (one host, or hosts with a shared file
//! system); errors carry the classes of §14.7 ([`FileErrorClass`]).
//!
//! Data representations: `native` and `internal` store the bytes as
//! they are in memory, `external32` converts every basic element
//! (`crate::datatype::external32`), and a representation registered with
//! conversion functions goes through them ([`convert`]). Collective
//! writes and reads go through aggregators ([`two_phase`]); non-blocking
//! and split collective accesses complete when they start (§14.4.5
//! allows it). On the simulator every access is charged to the caller's
//! clock, queued behind the other accesses of its node ([`storage`]).

mod convert;
mod error;
mod mode;
mod shared;
mod storage;
mod two_phase;
mod view;

pub use convert::{Calling, Conversion};
pub use error::{FileErrorClass, ViewError};
pub use mode::{Access, AccessMode};
pub use view::{DataRep, Registry, View};

use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use error::{decode, encode, fail, os};
use shared::SharedPointer;

use adi::HostCost;

use crate::comm::Status;
use crate::datatype::external32::Signature;
use crate::datatype::Equivalence;
use crate::error::Overflow;
use crate::info::Info;
use crate::staged::{incoming, outgoing, Span};
use crate::{Communicator, MpiError, Result, SimpleCommunicator};

/// Where an access starts (§14.4.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Position {
    /// An explicit offset, in etypes of the view.
    At(u64),
    /// The process's own file pointer.
    Individual,
    /// The pointer the processes share, taken by each access in turn.
    Shared,
    /// The shared pointer, taken by all processes together in rank order
    /// (`_ordered`, collective).
    Ordered,
}

/// Reading or writing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// From the file into memory.
    Read,
    /// From memory into the file.
    Write,
}

/// Where `MPI_File_seek` counts from (§14.4.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Whence {
    /// From the start of the view (`MPI_SEEK_SET`).
    Set,
    /// From the current position (`MPI_SEEK_CUR`).
    Current,
    /// From the end of the file, in the view (`MPI_SEEK_END`).
    End,
}

/// The split collective access a file has begun and not ended (§14.4.5):
/// the kind of access, and how it went.
#[derive(Debug)]
struct Split {
    position: Position,
    direction: Direction,
    explicit: bool,
    result: Result<Status>,
}

/// A file opened by the processes of a communicator (`MPI_File`).
pub struct File {
    comm: SimpleCommunicator,
    path: PathBuf,
    os: std::fs::File,
    mode: AccessMode,
    view: View,
    /// The individual file pointer, in etypes of the view.
    pointer: u64,
    shared: Option<SharedPointer>,
    atomic: bool,
    info: Info,
    split: Option<Split>,
    /// Write system calls this process made on the file ([`File::writes`]).
    writes: std::cell::Cell<u64>,
    /// The same of reads ([`File::reads`]).
    reads: std::cell::Cell<u64>,
    /// On the simulator, the storage queue of this process's node.
    queue: Option<storage::NodeQueue>,
}

/// Everyone's outcome of a step of a collective call: `Ok` if every
/// process succeeded, else the error of the first process that failed
/// (this one's own, if it failed).
fn agree(comm: &SimpleCommunicator, mine: Result<()>) -> Result<()> {
    let word = match &mine {
        Ok(()) => Vec::new(),
        Err(e) => encode(e),
    };
    let all = comm.allgather_bytes(&word)?;
    mine?;
    match all.iter().enumerate().find(|(_, w)| !w.is_empty()) {
        Some((r, w)) => Err(decode(w, r as i32)),
        None => Ok(()),
    }
}

/// Check that every process gave the same `mine` to a collective call
/// that needs it (`MPI_ERR_NOT_SAME`), `what` naming the argument.
fn same(comm: &SimpleCommunicator, what: &str, mine: &[u8]) -> Result<()> {
    let all = comm.allgather_bytes(mine)?;
    match all.iter().position(|w| w != &all[0]) {
        Some(r) => Err(fail(
            FileErrorClass::NotSame,
            format!("rank 0 and rank {r} gave different {what} to a collective file call; every process must give the same (MPI 4.1 §14)"),
        )),
        None => Ok(()),
    }
}

/// A token that no other open of this job or of another job shares.
fn unique_token() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    format!("{:x}-{:x}-{}", std::process::id(), nanos, NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Whole elements of `sig` in `bytes` bytes.
fn elements(sig: &Signature, bytes: u64) -> usize {
    match sig.native_size() {
        0 => 0,
        each => (bytes / each) as usize,
    }
}

fn status(bytes: u64) -> Status {
    Status::new(crate::ANY_SOURCE, crate::ANY_TAG, bytes)
}

impl File {
    /// Open `path` on every process of `comm` (`MPI_File_open`, §14.2.1),
    /// collectively: every process gives the same path and mode. The first
    /// process creates the file if the mode says so; the others open it
    /// then. If any process cannot open it, none has it open and every
    /// process gets the same error.
    pub fn open(comm: &SimpleCommunicator, path: impl AsRef<Path>, mode: AccessMode, info: &Info) -> Result<File> {
        comm.intra_only("MPI_File_open (MPI 4.1 §14.2.1)")?;
        let comm = comm.duplicate()?;
        let path = path.as_ref().to_path_buf();
        let mut word = vec![mode.word()];
        word.extend_from_slice(path.as_os_str().as_bytes());
        same(&comm, "file names or access modes", &word)?;
        mode.check()?;
        let opened = |first: bool| -> Result<std::fs::File> {
            let mut o = std::fs::OpenOptions::new();
            o.read(mode.readable()).write(mode.writable());
            if first && mode.excl {
                o.create_new(true);
            } else if first && mode.create {
                o.create(true);
            }
            let f = o.open(&path).map_err(|e| os(&e, &format!("opening {}", path.display())))?;
            let meta = f.metadata().map_err(|e| os(&e, &format!("examining {}", path.display())))?;
            if meta.is_dir() {
                return Err(fail(FileErrorClass::BadFile, format!("{} is a directory, not a file", path.display())));
            }
            Ok(f)
        };
        // The first process opens (and creates) the file and makes the
        // shared pointer; its outcome and the pointer's name go to all.
        let first = (comm.rank() == 0).then(|| {
            let f = opened(true)?;
            let start = if mode.append { f.metadata().map(|m| m.len()).unwrap_or(0) } else { 0 };
            let token = unique_token();
            let p = SharedPointer::create(shared::path_for(&path, &token), start)
                .or_else(|_| SharedPointer::create(shared::path_for(&std::env::temp_dir().join("f"), &token), start));
            let p = p?;
            Ok::<_, MpiError>((f, p, token))
        });
        let word = match &first {
            Some(Ok((_, p, _))) => {
                let mut w = vec![0];
                w.extend_from_slice(p.path().as_os_str().as_bytes());
                w
            }
            Some(Err(e)) => encode(e),
            None => Vec::new(),
        };
        let all = comm.allgather_bytes(&word)?;
        if all[0].first() != Some(&0) {
            return Err(match first {
                Some(Err(e)) => e,
                _ => decode(&all[0], 0),
            });
        }
        let pointer_path = PathBuf::from(std::ffi::OsStr::from_bytes(&all[0][1..]));
        let mine = match first {
            Some(r) => r.map(|(f, p, _)| (f, p)),
            None => opened(false).and_then(|f| Ok((f, SharedPointer::join(pointer_path)?))),
        };
        let outcome = agree(&comm, mine.as_ref().map(drop).map_err(Clone::clone));
        let (os_file, shared) = match (outcome, mine) {
            (Ok(()), Ok(v)) => v,
            (Err(e), Ok((_, p))) => {
                if comm.rank() == 0 {
                    p.remove();
                }
                return Err(e);
            }
            (Err(e), Err(_)) | (Ok(()), Err(e)) => return Err(e),
        };
        let pointer = if mode.append { os_file.metadata().map(|m| m.len()).unwrap_or(0) } else { 0 };
        let file = File {
            comm,
            path,
            os: os_file,
            mode,
            view: View::bytes(),
            pointer,
            shared: Some(shared),
            atomic: false,
            info: info.clone(),
            split: None,
            writes: std::cell::Cell::new(0),
            reads: std::cell::Cell::new(0),
            queue: None,
        };
        let mut file = file;
        file.queue = file.node_queue()?;
        file.charge(1, 0)?;
        Ok(file)
    }

    /// Close the file on every process (`MPI_File_close`, collective):
    /// once all have closed it, the shared pointer goes, and the file too
    /// if it was opened with `delete_on_close`.
    pub fn close(mut self) -> Result<()> {
        self.charge(1, 0)?;
        // The data is in the file system already (every access wrote it
        // through); making it durable is MPI_File_sync's job, not close's.
        let r = agree(&self.comm, Ok(()));
        if self.comm.rank() == 0 {
            if let Some(p) = self.shared.take() {
                p.remove();
            }
            if self.mode.delete_on_close {
                let _ = std::fs::remove_file(&self.path);
            }
        }
        r
    }

    /// Delete the file at `path` (`MPI_File_delete`, §14.2.3).
    pub fn delete(path: impl AsRef<Path>) -> Result<()> {
        let p = path.as_ref();
        std::fs::remove_file(p).map_err(|e| os(&e, &format!("deleting {}", p.display())))
    }

    /// The processes that opened the file: a duplicate of their communicator.
    pub fn communicator(&self) -> &SimpleCommunicator {
        &self.comm
    }

    /// The path the file was opened with.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The access mode (`MPI_File_get_amode`).
    pub fn mode(&self) -> AccessMode {
        self.mode
    }

    /// The hints given (`MPI_File_get_info`): none changes what the file does.
    pub fn info(&self) -> &Info {
        &self.info
    }

    /// Replace the hints (`MPI_File_set_info`, collective).
    pub fn set_info(&mut self, info: &Info) -> Result<()> {
        self.info = info.clone();
        Ok(())
    }

    /// The file's size in bytes (`MPI_File_get_size`).
    pub fn size(&self) -> Result<u64> {
        self.os.metadata().map(|m| m.len()).map_err(|e| os(&e, &format!("examining {}", self.path.display())))
    }

    /// Truncate or extend the file to `size` bytes (`MPI_File_set_size`,
    /// collective, the same size everywhere).
    pub fn set_size(&mut self, size: u64) -> Result<()> {
        same(&self.comm, "sizes", &size.to_le_bytes())?;
        self.writable("MPI_File_set_size")?;
        let r = if self.comm.rank() == 0 {
            self.os.set_len(size).map_err(|e| os(&e, &format!("resizing {}", self.path.display())))
        } else {
            Ok(())
        };
        agree(&self.comm, r)
    }

    /// Make the file at least `size` bytes, with its storage allocated
    /// (`MPI_File_preallocate`, collective).
    pub fn preallocate(&mut self, size: u64) -> Result<()> {
        same(&self.comm, "sizes", &size.to_le_bytes())?;
        self.writable("MPI_File_preallocate")?;
        // Checked on every process (the size is the same everywhere), so
        // that none waits in `agree` for one that returned early.
        let len = i64::try_from(size).map_err(|_| fail(FileErrorClass::Io, format!("{size} bytes is too large")))?;
        let r = if self.comm.rank() == 0 && size > 0 {
            // SAFETY: `posix_fallocate` passes no memory; `self.os` owns the descriptor, open for the
            // call, and `0..len` is a range it accepts (`len` fits an `i64`, checked above).
            match unsafe { libc::posix_fallocate(self.os.as_raw_fd(), 0, len) } {
                0 => Ok(()),
                e => Err(os(&std::io::Error::from_raw_os_error(e), &format!("allocating {}", self.path.display()))),
            }
        } else {
            Ok(())
        };
        agree(&self.comm, r)
    }

    /// Transfer data to the storage device (`MPI_File_sync`, collective).
    pub fn sync(&mut self) -> Result<()> {
        self.charge(1, 0)?;
        let r = match self.os.sync_data() {
            // A file that cannot be synchronised (a device such as
            // /dev/null, a pipe) has nothing to make durable.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(()),
            r => r.map_err(|e| os(&e, &format!("syncing {}", self.path.display()))),
        };
        agree(&self.comm, r)
    }

    /// Atomic mode (`MPI_File_set_atomicity`, collective, §14.6.1): each
    /// access then excludes the others' on the whole file while it runs.
    pub fn set_atomicity(&mut self, atomic: bool) -> Result<()> {
        same(&self.comm, "atomicity flags", &[u8::from(atomic)])?;
        self.atomic = atomic;
        Ok(())
    }

    /// Whether the file is in atomic mode.
    pub fn atomicity(&self) -> bool {
        self.atomic
    }

    /// Set the view (`MPI_File_set_view`, collective, §14.3): the data
    /// representation and the etype's size must be the same everywhere.
    /// Both file pointers go back to 0.
    pub fn set_view(&mut self, view: View) -> Result<()> {
        let mut word = view.etype_size().to_le_bytes().to_vec();
        word.extend_from_slice(view.rep().name().as_bytes());
        same(&self.comm, "data representations or etype sizes", &word)?;
        let local = if self.split.is_some() {
            Err(self.split_pending())
        } else if view.overlaps() && self.mode.writable() {
            Err(fail(
                FileErrorClass::Io,
                "the etype or filetype covers some bytes twice, which a file opened for writing does not allow (MPI 4.1 §14.3)",
            ))
        } else {
            match (&self.shared, self.comm.rank()) {
                (Some(p), 0) => p.set(0),
                _ => Ok(()),
            }
        };
        agree(&self.comm, local)?;
        self.view = view;
        self.pointer = 0;
        Ok(())
    }

    /// The view.
    pub fn view(&self) -> &View {
        &self.view
    }

    /// How many contiguous writes this process has made to the file so
    /// far: a diagnostic of collective buffering ([`two_phase`]), where an
    /// aggregator writes the pieces of many processes at once and the
    /// others write nothing.
    pub fn writes(&self) -> u64 {
        self.writes.get()
    }

    /// How many contiguous reads this process has made from the file so
    /// far (see [`File::writes`]).
    pub fn reads(&self) -> u64 {
        self.reads.get()
    }

    /// The individual file pointer, in etypes (`MPI_File_get_position`).
    pub fn position(&self) -> u64 {
        self.pointer
    }

    /// Where a new view starts, in bytes (§14.3): `disp`, not negative,
    /// or for `None` (`MPI_DISPLACEMENT_CURRENT`, a sequential file's only)
    /// the byte the shared file pointer is at in the current view.
    pub fn view_start(&self, disp: Option<i64>) -> Result<u64> {
        match disp {
            None if !self.mode.sequential => Err(ViewError::CurrentNotSequential.into()),
            None => self.byte_offset(self.position_shared()?),
            Some(d) => u64::try_from(d).map_err(|_| ViewError::NegativeDisp { disp: d }.into()),
        }
    }

    /// The shared file pointer, in etypes (`MPI_File_get_position_shared`).
    pub fn position_shared(&self) -> Result<u64> {
        self.shared()?.get()
    }

    /// The offset `whence` names plus `offset`, refused if negative.
    fn sought(&self, offset: i64, whence: Whence, current: u64) -> Result<u64> {
        let base = match whence {
            Whence::Set => 0,
            Whence::Current => current,
            Whence::End => self.view.data_before(self.size()?).div_ceil(self.view.etype_size()),
        };
        base.checked_add_signed(offset).ok_or(MpiError::View(ViewError::BeforeStart { offset, base: base as i64 }))
    }

    /// Move the individual file pointer (`MPI_File_seek`).
    pub fn seek(&mut self, offset: i64, whence: Whence) -> Result<()> {
        self.individual_allowed("MPI_File_seek")?;
        self.pointer = self.sought(offset, whence, self.pointer)?;
        Ok(())
    }

    /// Move the shared file pointer (`MPI_File_seek_shared`, collective,
    /// the same arguments everywhere).
    pub fn seek_shared(&mut self, offset: i64, whence: Whence) -> Result<()> {
        let mut word = offset.to_le_bytes().to_vec();
        word.push(whence as u8);
        same(&self.comm, "offsets or whence", &word)?;
        let r = if self.comm.rank() == 0 {
            // No early return: the others wait in `agree` for this outcome.
            self.position_shared().and_then(|cur| self.sought(offset, whence, cur)).and_then(|p| self.shared()?.set(p))
        } else {
            Ok(())
        };
        agree(&self.comm, r)
    }

    /// The absolute byte position in the file of etype offset `offset` of
    /// the view (`MPI_File_get_byte_offset`).
    pub fn byte_offset(&self, offset: u64) -> Result<u64> {
        let pos = offset.checked_mul(self.view.etype_size()).ok_or(Overflow::Offset { value: offset })?;
        if self.view.filetype().size == 0 {
            return Ok(self.view.disp());
        }
        Ok(self.view.segments(pos, 1)?.first().map_or(self.view.disp(), |s| s.0))
    }

    fn shared(&self) -> Result<&SharedPointer> {
        self.shared.as_ref().ok_or_else(|| fail(FileErrorClass::File, "the file is closed"))
    }

    fn writable(&self, call: &str) -> Result<()> {
        if !self.mode.writable() {
            return Err(fail(
                FileErrorClass::ReadOnly,
                format!("{call}: {} was opened MPI_MODE_RDONLY", self.path.display()),
            ));
        }
        Ok(())
    }

    fn individual_allowed(&self, call: &str) -> Result<()> {
        if self.mode.sequential {
            return Err(fail(
                FileErrorClass::UnsupportedOperation,
                format!("{call}: {} was opened MPI_MODE_SEQUENTIAL, which allows only the shared file pointer (MPI 4.1 §14.2.1)", self.path.display()),
            ));
        }
        Ok(())
    }

    fn split_pending(&self) -> MpiError {
        MpiError::Request(crate::error::RequestMisuse::SplitBegun)
    }

    /// Access `span`'s elements at `buf` (`MPI_File_read_at`, `_write`,
    /// `_read_shared`, ... §14.4): `position` says where, `direction`
    /// which way. A read stops at the end of the file; the status says how
    /// many bytes moved. Collective forms call this on every process.
    ///
    /// # Safety
    /// Every block of the span's elements at `buf` is, for the duration of the call, readable and
    /// not modified (a write), or writable and not otherwise accessed (a read).
    pub unsafe fn access_raw(
        &mut self,
        position: Position,
        direction: Direction,
        buf: *mut u8,
        span: &Span,
        signature: Option<&Signature>,
    ) -> Result<Status> {
        let checked = self.check_access(position, direction, span, signature);
        let (etypes, ordered_at) = match (position, checked) {
            // Every process takes part in the exchanges of an ordered
            // access, failed or not, so that none waits for ever.
            (Position::Ordered, c) => self.ordered_start(c)?,
            (_, c) => (c?, 0),
        };
        let start = match position {
            Position::At(o) => o,
            Position::Individual => self.pointer,
            Position::Shared => self.shared()?.fetch_add(etypes)?,
            Position::Ordered => ordered_at,
        };
        let esize = self.view.etype_size();
        let pos = start.checked_mul(esize).ok_or(Overflow::Offset { value: start })?;
        let len = etypes * esize;
        let segments = self.view.segments(pos, len)?;
        let external = match *self.view.rep() {
            DataRep::External32 => signature,
            _ => None,
        };
        self.charge(segments.len() as u64 + u64::from(position == Position::Shared), len)?;
        let _lock = self.atomic.then(|| Locked::take(&self.os, direction));
        let moved = match direction {
            Direction::Write => {
                // SAFETY: writing, the span's elements at `buf` are readable and unmodified for this
                // call (`# Safety`), and `data`, borrowed from them when direct, is written before it ends.
                let data = unsafe { outgoing(buf, span, "file write")? };
                match external {
                    Some(sig) => self.write_segments(&segments, &sig.to_external(&data, elements(sig, len))?)?,
                    None => self.write_segments(&segments, &data)?,
                }
            }
            Direction::Read => {
                // SAFETY: reading, the span's elements at `buf` are writable and untouched for this
                // call (`# Safety`), and `inc` is finished (or dropped, on an error) before it returns:
                // what `incoming` asks.
                let mut inc = unsafe { incoming(buf, span, "file read", false)? };
                // SAFETY: `inc`'s bytes are the caller's span, writable and untouched for this call
                // (`# Safety`), or the staging buffer `inc` owns; `out` is their only user until
                // `finish`.
                let out = unsafe { inc.bytes() };
                let n = match external {
                    Some(sig) => {
                        let mut ext = crate::datatype::zeroed_buffer(out.len(), "a conversion buffer")?;
                        let n = self.read_segments(&segments, &mut ext)?;
                        let whole = elements(sig, n);
                        let native = sig.from_external(&ext[..whole * sig.external_size() as usize], whole)?;
                        out[..native.len()].copy_from_slice(&native);
                        native.len() as u64
                    }
                    None => self.read_segments(&segments, out)?,
                };
                // SAFETY: the reads into `out` are over, and the span's elements at `buf` are still
                // writable and untouched within this call (`# Safety`).
                unsafe { inc.finish(n) };
                n
            }
        };
        if position == Position::Individual {
            self.pointer = start + moved / esize;
        }
        Ok(status(moved))
    }

    /// A collective access (`MPI_File_write_all`, `_at_all`, the split
    /// collectives' `_begin`, ...): writes go through aggregators when
    /// they can ([`two_phase`]), everything else as [`File::access_raw`].
    /// Every process of the file's group calls it.
    ///
    /// # Safety
    /// As [`File::access_raw`]: every block of the span's elements at `buf` is, for the duration
    /// of the call, readable and not modified (a write), or writable and not otherwise accessed
    /// (a read).
    pub unsafe fn access_all_raw(
        &mut self,
        position: Position,
        direction: Direction,
        buf: *mut u8,
        span: &Span,
        signature: Option<&Signature>,
    ) -> Result<Status> {
        if self.two_phase(position, direction) {
            // SAFETY: `buf`'s span is readable and unmodified (a write) or writable and untouched (a
            // read) for this call (`# Safety`): what `write_two_phase` and `read_two_phase` ask.
            return unsafe {
                match direction {
                    Direction::Write => self.write_two_phase(position, buf, span, signature),
                    Direction::Read => self.read_two_phase(position, buf, span),
                }
            };
        }
        // SAFETY: the same guarantee on `buf`'s span for this call (`# Safety`) is what `access_raw`
        // asks.
        unsafe { self.access_raw(position, direction, buf, span, signature) }
    }

    /// What makes an access erroneous before it starts: the mode, a count
    /// that is not whole etypes, an `external32` view without the memory
    /// type's signature. The etypes the access moves.
    fn check_access(
        &self,
        position: Position,
        direction: Direction,
        span: &Span,
        signature: Option<&Signature>,
    ) -> Result<u64> {
        let call = match direction {
            Direction::Read => "a read",
            Direction::Write => "a write",
        };
        match direction {
            Direction::Write => self.writable(call)?,
            Direction::Read if !self.mode.readable() => {
                return Err(fail(
                    FileErrorClass::Access,
                    format!("{call}: {} was opened MPI_MODE_WRONLY", self.path.display()),
                ))
            }
            Direction::Read => {}
        }
        if matches!(position, Position::At(_) | Position::Individual) {
            self.individual_allowed(call)?;
        }
        if *self.view.rep() == DataRep::External32 {
            match signature {
                Some(sig) if sig.external_size() == sig.native_size() => {}
                Some(_) => {
                    return Err(fail(
                        FileErrorClass::UnsupportedDatarep,
                        "this datatype has basic elements (long, unsigned long, wchar_t) whose external32 size differs from their size here; external32 files take the others (docs/guide/io.md)",
                    ))
                }
                None => {
                    return Err(fail(
                        FileErrorClass::UnsupportedDatarep,
                        "an external32 view needs the memory datatype's signature: use a native view from the typed API",
                    ))
                }
            }
        }
        let len = span.len() as u64;
        let esize = self.view.etype_size();
        if len % esize != 0 {
            return Err(ViewError::PartialEtype { len, etype: esize }.into());
        }
        Ok(len / esize)
    }

    /// The exchanges of an ordered access (§14.4.4): everyone's etype
    /// count, then the shared pointer the first process moves past all
    /// of them. `checked` is this process's own check; a failure anywhere
    /// fails the access everywhere. The etypes and where they start.
    fn ordered_start(&self, checked: Result<u64>) -> Result<(u64, u64)> {
        let word = match &checked {
            Ok(n) => n.to_le_bytes().to_vec(),
            Err(e) => encode(e),
        };
        let all = self.comm.allgather_bytes(&word)?;
        let etypes = checked?;
        let mut counts = Vec::with_capacity(all.len());
        for (r, w) in all.iter().enumerate() {
            match <[u8; 8]>::try_from(w.as_slice()) {
                Ok(b) => counts.push(u64::from_le_bytes(b)),
                Err(_) => return Err(decode(w, r as i32)),
            }
        }
        let me = self.comm.rank() as usize;
        let before: u64 = counts[..me].iter().sum();
        let total: u64 = counts.iter().sum();
        let base = if me == 0 { self.shared().and_then(|p| p.fetch_add(total)) } else { Ok(0) };
        let word = match &base {
            Ok(b) => b.to_le_bytes().to_vec(),
            Err(e) => encode(e),
        };
        let all = self.comm.allgather_bytes(if me == 0 { &word } else { &[] })?;
        base?;
        match <[u8; 8]>::try_from(all[0].as_slice()) {
            Ok(b) => Ok((etypes, u64::from_le_bytes(b) + before)),
            Err(_) => Err(decode(&all[0], 0)),
        }
    }

    /// Charge `ops` file accesses and `bytes` bytes moved to this
    /// process's simulated clock (the profile's `io_op_ns` and
    /// `io_ns_per_byte`; nothing on the real backends).
    ///
    /// On the simulator the accesses of a node queue for its storage
    /// ([`storage`]): an access that finds the device busy waits first.
    fn charge(&self, ops: u64, bytes: u64) -> Result<()> {
        let mut shared = self.comm.shared().borrow_mut();
        let e = shared.engine()?;
        let before = e.now_ps();
        e.charge(HostCost::IoOp, ops);
        e.charge(HostCost::IoByte, bytes);
        if let (Some(q), Some(before), Some(after)) = (&self.queue, before, e.now_ps()) {
            let wait = q.take(before, after - before).map_err(|err| {
                os(&err, "the simulated storage queue of this node (io-queue.* in the job directory)")
            })?;
            if wait > 0 {
                e.compute(wait as f64 / 1000.0)?;
            }
        }
        Ok(())
    }

    /// The storage queue of this process's node, on the simulator.
    fn node_queue(&self) -> Result<Option<storage::NodeQueue>> {
        let node = {
            let mut shared = self.comm.shared().borrow_mut();
            let e = shared.engine()?;
            match (e.now_ps(), e.node()) {
                (Some(_), Some(node)) => node,
                _ => return Ok(None),
            }
        };
        let Some(dir) = adi::JobEnv::from_env().ok().flatten().and_then(|j| j.dir) else { return Ok(None) };
        storage::NodeQueue::open(&dir, node)
            .map(Some)
            .map_err(|err| os(&err, &format!("the simulated storage queue of node {node} in {}", dir.display())))
    }

    fn write_segments(&self, segments: &[(u64, u64)], mut data: &[u8]) -> Result<u64> {
        let total = data.len() as u64;
        for &(at, n) in segments {
            self.writes.set(self.writes.get() + 1);
            let (now, rest) = data.split_at(n as usize);
            self.os
                .write_all_at(now, at)
                .map_err(|e| os(&e, &format!("writing {n} bytes at offset {at} of {}", self.path.display())))?;
            data = rest;
        }
        Ok(total)
    }

    /// Read into `out`, stopping at the end of the file: the bytes read.
    fn read_segments(&self, segments: &[(u64, u64)], out: &mut [u8]) -> Result<u64> {
        let mut done = 0usize;
        for &(at, n) in segments {
            self.reads.set(self.reads.get() + 1);
            let want = n as usize;
            let mut got = 0usize;
            while got < want {
                match self.os.read_at(&mut out[done + got..done + want], at + got as u64) {
                    Ok(0) => return Ok((done + got) as u64),
                    Ok(k) => got += k,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        return Err(os(&e, &format!("reading {n} bytes at offset {at} of {}", self.path.display())))
                    }
                }
            }
            done += want;
        }
        Ok(done as u64)
    }

    /// Begin a split collective access (`MPI_File_read_all_begin`, ...,
    /// §14.4.5): done now, its status kept for the `_end`. One at a time
    /// per file.
    ///
    /// # Safety
    /// As [`File::access_raw`], for this call only (the access is done before it returns; the
    /// `_end` only reports it): every block of the span's elements at `buf` is, for the duration
    /// of the call, readable and not modified (a write), or writable and not otherwise accessed
    /// (a read).
    pub unsafe fn begin_raw(
        &mut self,
        position: Position,
        direction: Direction,
        buf: *mut u8,
        span: &Span,
        signature: Option<&Signature>,
    ) -> Result<()> {
        if self.split.is_some() {
            return Err(self.split_pending());
        }
        // SAFETY: `buf`'s span is readable and unmodified (a write) or writable and untouched (a read)
        // for this call (`# Safety`): what `access_all_raw` asks, whose access ends within it.
        let result = unsafe { self.access_all_raw(position, direction, buf, span, signature) };
        self.keep_split(position, direction, result);
        Ok(())
    }

    /// Keep a split collective access's result for its `_end`.
    fn keep_split(&mut self, position: Position, direction: Direction, result: Result<Status>) {
        let explicit = matches!(position, Position::At(_));
        let position = if explicit { Position::At(0) } else { position };
        self.split = Some(Split { position, direction, explicit, result });
    }

    /// End the split collective access begun (`MPI_File_read_all_end`,
    /// ...): `position` and `direction` name the `_end` called (`At` for
    /// the `_at_all` forms, any offset).
    pub fn end(&mut self, position: Position, direction: Direction) -> Result<Status> {
        let explicit = matches!(position, Position::At(_));
        let matches = self.split.as_ref().is_some_and(|s| {
            s.direction == direction && s.explicit == explicit && (explicit || s.position == position)
        });
        if !matches {
            return Err(MpiError::Request(crate::error::RequestMisuse::SplitNotBegun));
        }
        self.split
            .take()
            .map_or_else(|| Err(MpiError::Request(crate::error::RequestMisuse::SplitNotBegun)), |s| s.result)
    }

    /// Write `data` at `position` (the typed form of [`File::access_raw`]).
    pub fn write_from<T: Equivalence>(&mut self, position: Position, data: &[T]) -> Result<Status> {
        let bytes: &[u8] = bytemuck::cast_slice(data);
        // SAFETY: `bytes` is `data`'s `bytes.len()` bytes, borrowed (so unmodified) for this call; a
        // write only reads them, so the `cast_mut` gives no write access.
        unsafe {
            self.access_raw(position, Direction::Write, bytes.as_ptr().cast_mut(), &Span::bytes(bytes.len()), None)
        }
    }

    /// Read into `data` from `position`: the status says how many bytes
    /// came (fewer at the end of the file).
    pub fn read_into<T: Equivalence>(&mut self, position: Position, data: &mut [T]) -> Result<Status> {
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(data);
        // SAFETY: `bytes` is `data`'s `bytes.len()` bytes, mutably borrowed for this call, so writable
        // and reached by nothing else during it.
        unsafe { self.access_raw(position, Direction::Read, bytes.as_mut_ptr(), &Span::bytes(bytes.len()), None) }
    }

    /// `MPI_File_write_at`.
    pub fn write_at<T: Equivalence>(&mut self, offset: u64, data: &[T]) -> Result<Status> {
        self.write_from(Position::At(offset), data)
    }

    /// `MPI_File_read_at`.
    pub fn read_at<T: Equivalence>(&mut self, offset: u64, data: &mut [T]) -> Result<Status> {
        self.read_into(Position::At(offset), data)
    }

    /// `MPI_File_write_at_all` (collective).
    pub fn write_at_all<T: Equivalence>(&mut self, offset: u64, data: &[T]) -> Result<Status> {
        self.write_all_from(Position::At(offset), data)
    }

    /// `MPI_File_write_all` (collective): at the individual pointer.
    pub fn write_all<T: Equivalence>(&mut self, data: &[T]) -> Result<Status> {
        self.write_all_from(Position::Individual, data)
    }

    /// A collective write of `data` at `position` (the typed form of
    /// [`File::access_all_raw`]).
    pub fn write_all_from<T: Equivalence>(&mut self, position: Position, data: &[T]) -> Result<Status> {
        let bytes: &[u8] = bytemuck::cast_slice(data);
        // SAFETY: `bytes` is `data`'s `bytes.len()` bytes, borrowed (so unmodified) for this call; a
        // write only reads them, so the `cast_mut` gives no write access.
        unsafe {
            self.access_all_raw(position, Direction::Write, bytes.as_ptr().cast_mut(), &Span::bytes(bytes.len()), None)
        }
    }

    /// `MPI_File_read_at_all` (collective).
    pub fn read_at_all<T: Equivalence>(&mut self, offset: u64, data: &mut [T]) -> Result<Status> {
        self.read_all_into(Position::At(offset), data)
    }

    /// `MPI_File_read_all` (collective): at the individual pointer.
    pub fn read_all<T: Equivalence>(&mut self, data: &mut [T]) -> Result<Status> {
        self.read_all_into(Position::Individual, data)
    }

    /// A collective read into `data` from `position` (the typed form of
    /// [`File::access_all_raw`]).
    pub fn read_all_into<T: Equivalence>(&mut self, position: Position, data: &mut [T]) -> Result<Status> {
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(data);
        // SAFETY: `bytes` is `data`'s `bytes.len()` bytes, mutably borrowed for this call, so writable
        // and reached by nothing else during it.
        unsafe { self.access_all_raw(position, Direction::Read, bytes.as_mut_ptr(), &Span::bytes(bytes.len()), None) }
    }

    /// `MPI_File_write_ordered` (collective): the processes' data one
    /// after the other, in rank order, at the shared pointer.
    pub fn write_ordered<T: Equivalence>(&mut self, data: &[T]) -> Result<Status> {
        self.write_from(Position::Ordered, data)
    }

    /// `MPI_File_read_ordered` (collective).
    pub fn read_ordered<T: Equivalence>(&mut self, data: &mut [T]) -> Result<Status> {
        self.read_into(Position::Ordered, data)
    }
}

impl Drop for File {
    /// A file dropped without [`File::close`] (a C program that never
    /// called `MPI_File_close` before `MPI_Finalize`, §14.2.2): the first
    /// process removes the shared pointer's file, which nothing else
    /// would. `close` has taken it already.
    fn drop(&mut self) {
        if self.comm.rank() == 0 {
            if let Some(p) = self.shared.take() {
                p.remove();
            }
        }
    }
}

/// An advisory lock on the whole data file for one access in atomic mode:
/// shared for a read, exclusive for a write, released when dropped.
struct Locked(std::os::fd::RawFd);

impl Locked {
    fn take(f: &std::fs::File, direction: Direction) -> Locked {
        let fd = f.as_raw_fd();
        let how = if direction == Direction::Write { libc::LOCK_EX } else { libc::LOCK_SH };
        // SAFETY: `flock` passes no memory; `fd` is the data file's descriptor, open while the `File`
        // lives, which outlives this lock (a local of the access).
        unsafe { libc::flock(fd, how) };
        Locked(fd)
    }
}

impl Drop for Locked {
    fn drop(&mut self) {
        // SAFETY: `flock` passes no memory; `self.0` is the data file's descriptor, still open: the
        // `File` outlives this lock, a local of the access.
        unsafe { libc::flock(self.0, libc::LOCK_UN) };
    }
}
