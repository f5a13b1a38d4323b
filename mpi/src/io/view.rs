//! File views (MPI 4.1 §14.3): which bytes of a file a process sees. A
//! view is a displacement, an elementary type (the unit of offsets) and
//! a filetype tiled from the displacement on; the process sees the data
//! of the tiles, in order, as one stream. [`View::segments`] turns a run
//! of that stream into the file's byte ranges.

use std::sync::Arc;

use super::error::{fail, FileErrorClass, ViewError};
use crate::datatype::Typemap;
use crate::Result;

/// A data representation (§14.5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DataRep {
    /// `"native"`: the bytes as they are in memory.
    Native,
    /// `"internal"`: the implementation's choice, here the native one.
    Internal,
    /// `"external32"` (§14.5.2): big-endian basic elements, converted by
    /// the memory datatype's signature on every access. Provided for
    /// types whose basic elements have the same size in both forms (all
    /// but `long`, `unsigned long` and `wchar_t` here).
    External32,
    /// A representation the program registered (§14.5.3) without
    /// conversion functions: the data is stored as it is in memory.
    User(String),
}

/// The data representations a process registered (`MPI_Register_datarep`,
/// §14.5.3): names only, as the data of each is stored natively.
#[derive(Clone, Debug, Default)]
pub struct Registry {
    names: Vec<String>,
}

/// The longest representation name (`MPI_MAX_DATAREP_STRING` - 1).
pub const MAX_DATAREP: usize = 127;

impl Registry {
    /// Register `name`: `MPI_ERR_DUP_DATAREP` if it is taken (by a
    /// predefined representation or an earlier registration).
    pub fn register(&mut self, name: &str) -> Result<()> {
        if name.is_empty() || name.len() > MAX_DATAREP {
            return Err(ViewError::DatarepName { len: name.len(), max: MAX_DATAREP }.into());
        }
        if ["native", "internal", "external32"].contains(&name) || self.names.iter().any(|n| n == name) {
            return Err(fail(
                FileErrorClass::DupDatarep,
                format!("the data representation {name:?} is already defined (MPI 4.1 §14.5.3)"),
            ));
        }
        self.names.push(name.to_string());
        Ok(())
    }
}

impl DataRep {
    /// The representation named `name`: a predefined one or one in
    /// `registry`; any other name is `MPI_ERR_UNSUPPORTED_DATAREP`.
    pub fn named(name: &str, registry: &Registry) -> Result<DataRep> {
        match name {
            "native" => Ok(DataRep::Native),
            "internal" => Ok(DataRep::Internal),
            "external32" => Ok(DataRep::External32),
            n if registry.names.iter().any(|r| r == n) => Ok(DataRep::User(n.to_string())),
            other => Err(fail(
                FileErrorClass::UnsupportedDatarep,
                format!("no data representation is called {other:?}: use \"native\", \"internal\" or \"external32\" (user-defined representations are not provided)"),
            )),
        }
    }

    /// Its name, as `MPI_File_get_view` reports it.
    pub fn name(&self) -> &str {
        match self {
            DataRep::Native => "native",
            DataRep::Internal => "internal",
            DataRep::External32 => "external32",
            DataRep::User(n) => n,
        }
    }
}

/// A process's view of a file.
#[derive(Clone, Debug)]
pub struct View {
    disp: u64,
    etype: Arc<Typemap>,
    filetype: Arc<Typemap>,
    rep: DataRep,
    /// The filetype's blocks `(offset, length)`, in typemap order, and
    /// where each starts in the data of one filetype.
    blocks: Vec<(isize, usize)>,
    starts: Vec<u64>,
    /// The etype or the filetype has bytes that two of its blocks cover:
    /// not allowed on a file opened for writing (§14.3).
    overlaps: bool,
}

/// The blocks of `t` (the view's `what`), checked to lie at
/// non-negative, non-decreasing displacements (§14.3; `MPI_ERR_IO`, as
/// ROMIO reports it), and whether two of them overlap.
fn ordered_blocks(t: &Typemap, what: &str) -> Result<(Vec<(isize, usize)>, bool)> {
    let mut blocks: Vec<(isize, usize)> = Vec::new();
    let mut overlaps = false;
    for (off, len) in t.blocks() {
        if len == 0 {
            continue;
        }
        if off < 0 {
            return Err(fail(
                FileErrorClass::Io,
                format!("the {what} has data at displacement {off}: a view's displacements must be non-negative (MPI 4.1 §14.3)"),
            ));
        }
        if let Some(&(prev, plen)) = blocks.last() {
            if off < prev {
                return Err(fail(
                    FileErrorClass::Io,
                    format!("the {what} has data at displacement {off} after displacement {prev}: a view's displacements must be non-decreasing (MPI 4.1 §14.3)"),
                ));
            }
            overlaps |= off < prev + plen as isize;
        }
        blocks.push((off, len));
    }
    Ok((blocks, overlaps))
}

impl View {
    /// The view every file starts with: displacement 0, bytes, native.
    pub fn bytes() -> View {
        let b = Arc::new(Typemap::basic(1, 1, 1));
        View {
            disp: 0,
            etype: b.clone(),
            filetype: b,
            rep: DataRep::Native,
            blocks: vec![(0, 1)],
            starts: vec![0],
            overlaps: false,
        }
    }

    /// A view of `filetype` tiled from byte `disp`, offsets counted in
    /// `etype`s. The filetype's data must be whole etypes, at
    /// non-negative, non-decreasing displacements (§14.3).
    pub fn new(disp: u64, etype: Arc<Typemap>, filetype: Arc<Typemap>, rep: DataRep) -> Result<View> {
        if etype.size == 0 {
            return Err(ViewError::EmptyEtype.into());
        }
        if filetype.size % etype.size != 0 {
            return Err(ViewError::NotEtypes { filetype: filetype.size as u64, etype: etype.size as u64 }.into());
        }
        if filetype.size > 0 && filetype.extent() <= 0 {
            return Err(ViewError::Extent { extent: filetype.extent() as i64 }.into());
        }
        let (_, etype_overlaps) = ordered_blocks(&etype, "etype")?;
        let (blocks, filetype_overlaps) = ordered_blocks(&filetype, "filetype")?;
        let mut starts = Vec::with_capacity(blocks.len());
        let mut at = 0u64;
        for &(_, len) in &blocks {
            starts.push(at);
            at += len as u64;
        }
        let overlaps = etype_overlaps || filetype_overlaps;
        Ok(View { disp, etype, filetype, rep, blocks, starts, overlaps })
    }

    /// The displacement.
    pub fn disp(&self) -> u64 {
        self.disp
    }

    /// The elementary type.
    pub fn etype(&self) -> &Arc<Typemap> {
        &self.etype
    }

    /// The filetype.
    pub fn filetype(&self) -> &Arc<Typemap> {
        &self.filetype
    }

    /// The data representation.
    pub fn rep(&self) -> &DataRep {
        &self.rep
    }

    /// Whether the etype or filetype overlaps itself (refused on a file
    /// opened for writing).
    pub fn overlaps(&self) -> bool {
        self.overlaps
    }

    /// Bytes in one etype.
    pub fn etype_size(&self) -> u64 {
        self.etype.size as u64
    }

    /// The file byte ranges `(offset, length)` of `len` bytes of the view's
    /// data stream from byte `pos` of it, adjacent ranges merged.
    pub fn segments(&self, pos: u64, len: u64) -> Result<Vec<(u64, u64)>> {
        let mut out: Vec<(u64, u64)> = Vec::new();
        if len == 0 {
            return Ok(out);
        }
        let size = self.filetype.size as u64;
        if size == 0 {
            return Err(ViewError::EmptyFiletype.into());
        }
        let extent = self.filetype.extent() as u64;
        let overflow = || fail(FileErrorClass::Io, "the access reaches past the largest file offset");
        let (mut tile, mut within) = (pos / size, pos % size);
        let mut left = len;
        let mut i = self.starts.partition_point(|&s| s <= within) - 1;
        while left > 0 {
            let (off, blen) = self.blocks[i];
            let skip = within - self.starts[i];
            let n = (blen as u64 - skip).min(left);
            let at = tile
                .checked_mul(extent)
                .and_then(|t| t.checked_add(self.disp))
                .and_then(|t| t.checked_add(off as u64 + skip))
                .ok_or_else(overflow)?;
            match out.last_mut() {
                Some((o, l)) if *o + *l == at => *l += n,
                _ => out.push((at, n)),
            }
            left -= n;
            within += n;
            i += 1;
            if i == self.blocks.len() {
                i = 0;
                within = 0;
                tile += 1;
            }
        }
        Ok(out)
    }

    /// Bytes of the view's data that lie before file byte `end` (the
    /// view's end of file when `end` is the file's size).
    pub fn data_before(&self, end: u64) -> u64 {
        let size = self.filetype.size as u64;
        if end <= self.disp || size == 0 {
            return 0;
        }
        let extent = self.filetype.extent() as u64;
        let rel = end - self.disp;
        let (tiles, rest) = (rel / extent, rel % extent);
        let partial: u64 =
            self.blocks.iter().map(|&(off, len)| (rest.saturating_sub(off as u64)).min(len as u64)).sum();
        tiles * size + partial
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::TypemapBuilder;
    use crate::MpiError;

    fn ints() -> Arc<Typemap> {
        Arc::new(Typemap::basic(4, 4, 1))
    }

    /// `count` blocks of one int, `stride` ints apart.
    fn strided(count: usize, stride: isize) -> Arc<Typemap> {
        Arc::new(Typemap::vector(count, 1, stride * 4, &ints()).unwrap())
    }

    #[test]
    fn the_byte_view_is_the_file() {
        let v = View::bytes();
        assert_eq!(v.segments(10, 5).unwrap(), vec![(10, 5)]);
        assert_eq!(v.data_before(7), 7);
    }

    #[test]
    fn a_strided_filetype_tiles() {
        // Two ints, 3 ints apart: the type covers bytes 0..4 and 12..16,
        // extent 16. Tiles at 100, 116, ...
        let v = View::new(100, ints(), strided(2, 3), DataRep::Native).unwrap();
        assert_eq!(v.segments(0, 4).unwrap(), vec![(100, 4)]);
        assert_eq!(v.segments(2, 8).unwrap(), vec![(102, 2), (112, 6)]);
        // The second tile follows the first with no gap: merged above.
        // The third int of the stream is the first of the second tile.
        assert_eq!(v.segments(8, 4).unwrap(), vec![(116, 4)]);
        assert_eq!(v.data_before(100), 0);
        assert_eq!(v.data_before(114), 6);
        assert_eq!(v.data_before(132), 16);
    }

    #[test]
    fn a_resized_filetype_leaves_room_for_the_others() {
        // Each of 4 processes sees one int in every 4: one int resized to 16 bytes.
        let mut b = TypemapBuilder::new();
        b.place(&ints(), 8, 1).unwrap();
        let t = Arc::new(b.finish().resized(0, 16).unwrap());
        let v = View::new(0, ints(), t, DataRep::Native).unwrap();
        assert_eq!(v.segments(0, 12).unwrap(), vec![(8, 4), (24, 4), (40, 4)]);
    }

    #[test]
    fn bad_views_are_refused() {
        let three = Arc::new(Typemap::basic(3, 1, 1));
        assert!(View::new(0, ints(), three, DataRep::Native).is_err());
        let mut b = TypemapBuilder::new();
        b.place(&ints(), 12, 1).unwrap();
        b.place(&ints(), 0, 1).unwrap();
        let decreasing = Arc::new(b.finish());
        let e = View::new(0, ints(), decreasing, DataRep::Native).err();
        assert!(matches!(e, Some(MpiError::File { class: FileErrorClass::Io, .. })), "{e:?}");
        let mut b = TypemapBuilder::new();
        b.place(&ints(), 0, 3).unwrap();
        b.place(&ints(), 4, 1).unwrap();
        assert!(View::new(0, ints(), Arc::new(b.finish()), DataRep::Native).unwrap().overlaps());
        let empty = Arc::new(Typemap::basic(0, 1, 1));
        assert!(View::new(0, empty, ints(), DataRep::Native).is_err());
        let mut reg = Registry::default();
        assert_eq!(DataRep::named("external32", &reg).unwrap(), DataRep::External32);
        assert!(DataRep::named("nonsense", &reg).is_err());
        assert_eq!(DataRep::named("native", &reg).unwrap(), DataRep::Native);
        reg.register("nonsense").unwrap();
        assert_eq!(DataRep::named("nonsense", &reg).unwrap(), DataRep::User("nonsense".into()));
        for dup in ["nonsense", "native", "external32"] {
            let e = reg.register(dup).err();
            assert!(matches!(e, Some(MpiError::File { class: FileErrorClass::DupDatarep, .. })), "{dup}: {e:?}");
        }
    }
}
