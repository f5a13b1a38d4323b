//! Typemaps (MPI 4.1 §5.1.1): where the data of one element of a datatype
//! lies, stored in the size of its description.
//!
//! A typemap is a tree of [`Node`]s: a run of bytes, `count` copies of
//! another typemap a stride apart, or a sequence of those. A vector of
//! 2^31 blocks is one `Repeat` node, not 2^31 blocks; the blocks are
//! produced when data moves, by [`Typemap::blocks`], which walks the tree
//! and merges adjacent blocks as it goes. What every call needs at once —
//! size, bounds, alignment, whether an element is one block — is computed
//! when the typemap is built.
//!
//! The constructors of §5.1.2-5.1.7 are [`TypemapBuilder`] placements
//! (used by the Rust API's [`crate::datatype::UserDatatype`] and the C
//! ABI alike); packing and unpacking (§5.2) go through [`Typemap::pack`]
//! and [`Typemap::unpack`], bounds-checked against a byte slice, or the
//! raw forms the C ABI uses on the caller's pointers.

use std::sync::Arc;

use crate::error::{MpiError, Result};

/// One part of a typemap's description.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    /// `len` bytes at `off`, made of basic elements of `basic` bytes each.
    Bytes {
        /// Byte offset.
        off: isize,
        /// Length in bytes.
        len: usize,
        /// Size of one basic element (`len` is a multiple of it).
        basic: usize,
    },
    /// `count` copies of `child`, the first at `disp`, each `stride`
    /// bytes after the one before.
    Repeat {
        /// Byte displacement of the first copy.
        disp: isize,
        /// Copies.
        count: usize,
        /// Bytes between consecutive copies.
        stride: isize,
        /// What is copied.
        child: Arc<Typemap>,
    },
    /// Parts in typemap order.
    Seq(Vec<Node>),
}

/// A datatype's typemap: its description and what is derived from it.
#[derive(Clone, Debug, PartialEq)]
pub struct Typemap {
    /// Bytes of data in one element (`MPI_Type_size`).
    pub size: usize,
    /// Lower and upper bound: the extent is `ub - lb` (§5.1.7).
    pub lb: isize,
    /// Upper bound.
    pub ub: isize,
    /// Bounds of the data itself (§5.1.8).
    pub true_lb: isize,
    /// Upper bound of the data.
    pub true_ub: isize,
    /// The largest alignment of its basic types, which pads a struct's
    /// extent as a C compiler pads a struct (§5.1.6).
    pub align: usize,
    /// Basic elements in one element (§5.1.11).
    pub basics: u64,
    /// The whole element as one block `(offset, length)`, when it is.
    pub one_block: Option<(isize, usize)>,
    /// The description.
    pub node: Node,
    /// The blocks of one element, when there are at most [`FLAT_BLOCKS`]:
    /// what every element of a pack walks, walked once (a bounded cache,
    /// so the typemap stays the size of its description).
    flat: Option<Arc<[(isize, usize)]>>,
}

/// The most blocks per element kept walked ([`Typemap::blocks`]).
pub const FLAT_BLOCKS: usize = 256;

fn overflow() -> MpiError {
    MpiError::TooLarge(crate::error::Overflow::Datatype)
}

impl Typemap {
    /// A basic type of `size` bytes made of `parts` equal basic elements
    /// (2 for the complex types), aligned to `align`.
    pub fn basic(size: usize, align: usize, parts: usize) -> Typemap {
        let parts = parts.max(1);
        Typemap {
            size,
            lb: 0,
            ub: size as isize,
            true_lb: 0,
            true_ub: size as isize,
            align: align.max(1),
            basics: parts as u64,
            one_block: (size > 0).then_some((0, size)),
            node: Node::Bytes { off: 0, len: size, basic: size / parts },
            flat: None,
        }
        .with_flat()
    }

    /// Keep the blocks walked when there are few ([`FLAT_BLOCKS`]).
    fn with_flat(mut self) -> Typemap {
        self.flat = None;
        let walked: Vec<(isize, usize)> = self.walk_blocks().take(FLAT_BLOCKS + 1).collect();
        if walked.len() <= FLAT_BLOCKS {
            self.flat = Some(walked.into());
        }
        self
    }

    /// The blocks of one element, walked from the description.
    fn walk_blocks(&self) -> Blocks<'_> {
        Blocks { flat: None, stack: vec![Frame { node: &self.node, base: 0, i: 0 }], pending: None }
    }

    /// The typemap of a Rust value type: one basic element of its size.
    pub fn of<T: crate::datatype::Equivalence>() -> Typemap {
        Typemap::basic(std::mem::size_of::<T>(), std::mem::align_of::<T>(), 1)
    }

    /// A pair type (`MPI_DOUBLE_INT`, ...; §6.9.4): a value of `value`
    /// bytes then an `int`, laid out as the C struct `{ value; int; }`.
    pub fn pair(value: usize, value_align: usize) -> Typemap {
        let value_t = Arc::new(Typemap::basic(value, value_align, 1));
        let int = Arc::new(Typemap::basic(4, 4, 1));
        let mut b = TypemapBuilder::new();
        // Infallible: two small blocks.
        let _ = b.place(&value_t, 0, 1);
        let _ = b.place(&int, value.next_multiple_of(4) as isize, 1);
        b.finish_struct().expect("a value and an int fit in an address space")
    }

    /// `count` blocks of `blocklength` elements of `old`, `stride` bytes
    /// apart (`MPI_Type_create_hvector`; `MPI_Type_vector` with the stride
    /// times `old`'s extent): one entry in the description however many
    /// blocks. Blocks of no elements make an empty typemap, with bounds 0
    /// (as MPICH has it), whatever the stride.
    pub fn vector(count: usize, blocklength: usize, stride: isize, old: &Arc<Typemap>) -> Result<Typemap> {
        let mut b = TypemapBuilder::new();
        if blocklength > 0 {
            let mut block = TypemapBuilder::new();
            block.place(old, 0, blocklength)?;
            b.place_strided(&Arc::new(block.finish()), 0, count, stride)?;
        }
        Ok(b.finish())
    }

    /// `ub - lb`.
    pub fn extent(&self) -> isize {
        self.ub - self.lb
    }

    /// One block, and elements that follow each other with no gap.
    pub fn dense(&self) -> bool {
        self.one_block.is_some() && self.extent() == self.size as isize
    }

    /// The same data with new bounds (`MPI_Type_create_resized`, §5.1.7).
    pub fn resized(&self, lb: isize, extent: isize) -> Result<Typemap> {
        let ub = lb.checked_add(extent).ok_or_else(overflow)?;
        Ok(Typemap { lb, ub, ..self.clone() })
    }

    /// The blocks `(offset, length)` of one element in typemap order,
    /// adjacent ones merged, produced as the tree is walked.
    pub fn blocks(&self) -> Blocks<'_> {
        match &self.flat {
            Some(f) => Blocks { flat: Some(f.iter()), stack: Vec::new(), pending: None },
            None => self.walk_blocks(),
        }
    }

    /// The bytes `count` elements span around their first: the lowest and
    /// one past the highest byte offset that holds data.
    fn data_span(&self, count: usize) -> Result<Option<(isize, isize)>> {
        if count == 0 || self.size == 0 {
            return Ok(None);
        }
        let last = self.extent().checked_mul(count as isize - 1).ok_or_else(overflow)?;
        let lo = self.true_lb.checked_add(last.min(0)).ok_or_else(overflow)?;
        let hi = self.true_ub.checked_add(last.max(0)).ok_or_else(overflow)?;
        Ok(Some((lo, hi)))
    }

    /// Check that `count` elements starting at offset 0 of a buffer of
    /// `len` bytes lie inside it.
    pub fn check_fits(&self, count: usize, len: usize) -> Result<()> {
        if let Some((lo, hi)) = self.data_span(count)? {
            if lo < 0 || hi > len as isize {
                return Err(crate::error::ArgError::Outside { count, lo: lo as i64, hi: hi as i64, len }.into());
            }
        }
        Ok(())
    }

    /// Bytes of `count` packed elements.
    pub fn packed_len(&self, count: usize) -> Result<usize> {
        self.size.checked_mul(count).ok_or_else(overflow)
    }

    /// Pack `count` elements of `buf` (the first at offset 0) into a new
    /// vector (§5.2). Fails if an element reaches outside `buf`.
    pub fn pack(&self, buf: &[u8], count: usize) -> Result<Vec<u8>> {
        self.check_fits(count, buf.len())?;
        let mut out = super::zeroed_buffer(self.packed_len(count)?, "a packing buffer")?;
        // SAFETY: check_fits proved every block of every element lies
        // inside `buf`, which is readable for its length.
        unsafe { self.pack_raw(buf.as_ptr(), count, &mut out) };
        Ok(out)
    }

    /// Unpack `packed` into elements of `buf` (the first at offset 0); a
    /// short `packed` fills the first blocks only. Fails if an element
    /// `packed` holds reaches outside `buf`.
    pub fn unpack(&self, packed: &[u8], buf: &mut [u8]) -> Result<()> {
        let count = if self.size == 0 { 0 } else { packed.len().div_ceil(self.size) };
        self.check_fits(count, buf.len())?;
        // SAFETY: check_fits proved every block of the elements `packed`
        // fills lies inside `buf`, which is writable for its length.
        unsafe { self.unpack_raw(packed, buf.as_mut_ptr()) };
        Ok(())
    }

    /// Pack `count` elements at `src` into `out` (`count * size` bytes).
    /// A null `src` is `MPI_BOTTOM`: the offsets are then absolute
    /// addresses (MPI 4.1 §5.1.12).
    ///
    /// # Safety
    /// Every block of the `count` elements at `src` is readable.
    pub unsafe fn pack_raw(&self, src: *const u8, count: usize, out: &mut [u8]) {
        if let (true, Some((off, _))) = (self.dense(), self.one_block) {
            let n = out.len().min(self.size.saturating_mul(count));
            // SAFETY: a dense type with one block lays the `count` elements out as one run of
            // `count * size` bytes at `addr(src, off)` (MPI_BOTTOM included), readable (`# Safety`);
            // `n` is at most that and at most `out.len()`, and `out` is a separate, exclusive slice.
            unsafe { std::ptr::copy_nonoverlapping(addr(src, off), out.as_mut_ptr(), n) };
            return;
        }
        let mut at = 0;
        for i in 0..count {
            let base = i as isize * self.extent();
            for (off, len) in self.blocks() {
                // SAFETY: `addr(src, base + off)` is a block of element `i < count`, whose `len` bytes
                // are readable (`# Safety`); `out[at..at + len]` is bounds-checked, and exclusive.
                unsafe { std::ptr::copy_nonoverlapping(addr(src, base + off), out[at..at + len].as_mut_ptr(), len) };
                at += len;
            }
        }
    }

    /// Unpack `packed` into elements at `dst`; a short `packed` fills the
    /// first blocks only. A null `dst` is `MPI_BOTTOM` (§5.1.12).
    ///
    /// # Safety
    /// Every block of the elements `packed` fills is writable at `dst` (and so is not part of
    /// `packed`).
    pub unsafe fn unpack_raw(&self, packed: &[u8], dst: *mut u8) {
        if packed.is_empty() || self.size == 0 {
            return;
        }
        if let (true, Some((off, _))) = (self.dense(), self.one_block) {
            // SAFETY: for a dense type with one block, the elements `packed` fills are the run of
            // `packed.len()` bytes at `addr(dst, off)`, writable and apart from `packed` (`# Safety`).
            unsafe { std::ptr::copy_nonoverlapping(packed.as_ptr(), addr(dst, off), packed.len()) };
            return;
        }
        let mut at = 0;
        let mut i = 0isize;
        while at < packed.len() {
            let base = i * self.extent();
            for (off, len) in self.blocks() {
                let take = len.min(packed.len() - at);
                if take == 0 {
                    return;
                }
                // SAFETY: `addr(dst, base + off)` is a block of element `i`, one `packed` fills (`take`
                // of its bytes), writable and apart from `packed` (`# Safety`); `packed[at..]` has at
                // least `take` bytes.
                unsafe { std::ptr::copy_nonoverlapping(packed[at..].as_ptr(), addr(dst, base + off), take) };
                at += take;
            }
            i += 1;
        }
    }

    /// Call `f(offset, len)` for the runs of the caller's buffer that hold
    /// packed bytes `off..off + len` of `count` elements, in order. The
    /// walk skips whole copies of a repeated part by arithmetic, so
    /// reaching a chunk in the middle of a vector of 2^31 blocks costs its
    /// depth, not the blocks before it: packing in bounded chunks costs
    /// what packing at once does.
    fn for_range(&self, count: usize, off: usize, len: usize, f: &mut dyn FnMut(isize, usize)) {
        if self.size == 0 || len == 0 {
            return;
        }
        let (mut i, mut skip, mut left) = (off / self.size, off % self.size, len);
        while left > 0 && i < count {
            visit(&self.node, i as isize * self.extent(), &mut skip, &mut left, f);
            i += 1;
        }
    }

    /// Pack bytes `off..off + out.len()` of the packed form of `count`
    /// elements at `src` into `out`: one chunk of [`Typemap::pack_raw`]'s
    /// output, for a message sent in bounded chunks.
    ///
    /// # Safety
    /// Every block of the `count` elements at `src` is readable, and
    /// `off + out.len()` is at most `count * size`.
    pub unsafe fn pack_range_raw(&self, src: *const u8, count: usize, off: usize, out: &mut [u8]) {
        let mut at = 0;
        self.for_range(count, off, out.len(), &mut |o, n| {
            // SAFETY: `addr(src, o)` starts a run of `n` bytes inside a block of one of the `count`
            // elements (`for_range` walks no further), readable (`# Safety`); `out[at..at + n]` is
            // within `out`, since the runs sum to at most `out.len()`.
            unsafe { std::ptr::copy_nonoverlapping(addr(src, o), out[at..at + n].as_mut_ptr(), n) };
            at += n;
        });
    }

    /// Unpack `data`, bytes `off..off + data.len()` of the packed form of
    /// `count` elements, into their places at `dst`.
    ///
    /// # Safety
    /// Every block of the `count` elements at `dst` is writable, and
    /// `off + data.len()` is at most `count * size`.
    pub unsafe fn unpack_range_raw(&self, dst: *mut u8, count: usize, off: usize, data: &[u8]) {
        let mut at = 0;
        self.for_range(count, off, data.len(), &mut |o, n| {
            // SAFETY: `addr(dst, o)` starts a run of `n` bytes inside a block of one of the `count`
            // elements (`for_range` walks no further), writable (`# Safety`); `data[at..at + n]` is
            // within `data`, since the runs sum to at most `data.len()`.
            unsafe { std::ptr::copy_nonoverlapping(data[at..at + n].as_ptr(), addr(dst, o), n) };
            at += n;
        });
    }

    /// The basic elements in typemap order, as `(size of one, how many)`
    /// runs, produced as the tree is walked.
    fn basic_runs(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        let mut stack = vec![Frame { node: &self.node, base: 0, i: 0 }];
        std::iter::from_fn(move || walk(&mut stack).map(|leaf| (leaf.basic, (leaf.len / leaf.basic.max(1)) as u64)))
    }

    /// Whole elements in `bytes` bytes of packed data (`MPI_Get_count`,
    /// §3.2.5), or `None` when they end inside one; a type of no data
    /// counts 0.
    pub fn count_in(&self, bytes: u64) -> Option<u64> {
        match self.size as u64 {
            0 => Some(0),
            size => (bytes % size == 0).then_some(bytes / size),
        }
    }

    /// Basic elements in `bytes` bytes of packed data, or `None` when
    /// they end inside one (§5.1.11).
    pub fn elements_in(&self, bytes: u64) -> Option<u64> {
        if self.size == 0 {
            return (bytes == 0).then_some(0);
        }
        let whole = bytes / self.size as u64;
        let mut rest = bytes % self.size as u64;
        let mut n = whole.checked_mul(self.basics)?;
        for (sz, run) in self.basic_runs() {
            if rest == 0 {
                break;
            }
            let k = (rest / sz.max(1) as u64).min(run);
            n += k;
            rest -= k * sz as u64;
            if k < run {
                break;
            }
        }
        (rest == 0).then_some(n)
    }

    /// Bytes of packed data that hold `n` basic elements: the inverse of
    /// [`Typemap::elements_in`] (`MPI_Status_set_elements`, §13.3).
    pub fn bytes_for(&self, n: u64) -> u64 {
        if self.basics == 0 {
            return 0;
        }
        let mut bytes = n / self.basics * self.size as u64;
        let mut rest = n % self.basics;
        for (sz, run) in self.basic_runs() {
            if rest == 0 {
                break;
            }
            let k = rest.min(run);
            bytes += k * sz as u64;
            rest -= k;
        }
        bytes
    }
}

/// The byte at `off` from `buf`: the standard's addressing (§5.1.12), in
/// which `buf` may be `MPI_BOTTOM` (null) and `off` an absolute address
/// from `MPI_Get_address`. Computed on the address, not as an offset from
/// null (undefined in Rust); the program exposed the address by passing
/// it to MPI.
pub fn addr(buf: *const u8, off: isize) -> *mut u8 {
    if buf.is_null() {
        std::ptr::with_exposed_provenance_mut(off as usize)
    } else {
        buf.cast_mut().wrapping_offset(off)
    }
}

/// A node being walked: the base offset it is placed at, and the next
/// child (or copy) to visit.
struct Frame<'a> {
    node: &'a Node,
    base: isize,
    i: usize,
}

/// A leaf reached by [`walk`]: a run of bytes at an absolute offset.
struct Leaf {
    off: isize,
    len: usize,
    basic: usize,
}

/// The next leaf of a depth-first walk, in typemap order.
/// [`Typemap::for_range`]'s walk of `node` placed at `base`: skip the
/// first `*skip` packed bytes, then hand `f` runs until `*left` are done.
fn visit(node: &Node, base: isize, skip: &mut usize, left: &mut usize, f: &mut dyn FnMut(isize, usize)) {
    match node {
        Node::Bytes { off, len, .. } => {
            if *skip >= *len {
                *skip -= *len;
                return;
            }
            let take = (*len - *skip).min(*left);
            if take > 0 {
                f(base + off + *skip as isize, take);
            }
            *skip = 0;
            *left -= take;
        }
        Node::Repeat { disp, count, stride, child } => {
            let one = child.size;
            let all = one.saturating_mul(*count);
            if one == 0 || *skip >= all {
                *skip -= all.min(*skip);
                return;
            }
            let first = *skip / one;
            *skip %= one;
            for k in first..*count {
                if *left == 0 {
                    return;
                }
                visit(&child.node, base + disp + k as isize * stride, skip, left, f);
            }
        }
        Node::Seq(parts) => {
            for p in parts {
                if *left == 0 {
                    return;
                }
                visit(p, base, skip, left, f);
            }
        }
    }
}

fn walk(stack: &mut Vec<Frame<'_>>) -> Option<Leaf> {
    loop {
        let top = stack.last_mut()?;
        let (base, i) = (top.base, top.i);
        top.i += 1;
        match top.node {
            Node::Bytes { off, len, basic } => {
                stack.pop();
                if i == 0 && *len > 0 {
                    return Some(Leaf { off: base + off, len: *len, basic: *basic });
                }
            }
            Node::Repeat { disp, count, stride, child } => {
                if i >= *count {
                    stack.pop();
                } else {
                    let at = base + disp + i as isize * stride;
                    stack.push(Frame { node: &child.node, base: at, i: 0 });
                }
            }
            Node::Seq(parts) => match parts.get(i) {
                Some(p) => stack.push(Frame { node: p, base, i: 0 }),
                None => {
                    stack.pop();
                }
            },
        }
    }
}

/// The blocks of one element, merged where adjacent
/// ([`Typemap::blocks`]).
pub struct Blocks<'a> {
    /// The kept walk, when there is one.
    flat: Option<std::slice::Iter<'a, (isize, usize)>>,
    stack: Vec<Frame<'a>>,
    pending: Option<(isize, usize)>,
}

impl Iterator for Blocks<'_> {
    type Item = (isize, usize);

    fn next(&mut self) -> Option<(isize, usize)> {
        if let Some(f) = &mut self.flat {
            return f.next().copied();
        }
        loop {
            let Some(leaf) = walk(&mut self.stack) else { return self.pending.take() };
            match &mut self.pending {
                Some((off, len)) if *off + *len as isize == leaf.off => *len += leaf.len,
                Some(_) => return self.pending.replace((leaf.off, leaf.len)),
                None => self.pending = Some((leaf.off, leaf.len)),
            }
        }
    }
}

/// Builds a typemap by placing copies of other typemaps (the type
/// constructors of MPI 4.1 §5.1.2-5.1.4).
#[derive(Default)]
pub struct TypemapBuilder {
    parts: Vec<Node>,
    size: usize,
    basics: u64,
    align: usize,
    /// Bounds so far, once anything is placed.
    bounds: Option<(isize, isize)>,
    /// Data bounds so far, once any data is placed.
    data: Option<(isize, isize)>,
    /// The data so far as one block, while it is.
    one_block: Option<Option<(isize, usize)>>,
}

impl TypemapBuilder {
    /// Nothing placed.
    pub fn new() -> TypemapBuilder {
        TypemapBuilder { align: 1, ..TypemapBuilder::default() }
    }

    /// Place `count` consecutive elements of `child` (one extent apart)
    /// from byte `disp`.
    pub fn place(&mut self, child: &Arc<Typemap>, disp: isize, count: usize) -> Result<()> {
        self.place_strided(child, disp, count, child.extent())
    }

    /// Place `count` elements of `child` from byte `disp`, `stride` bytes
    /// apart.
    pub fn place_strided(&mut self, child: &Arc<Typemap>, disp: isize, count: usize, stride: isize) -> Result<()> {
        if count == 0 {
            return Ok(());
        }
        let span = stride.checked_mul(count as isize - 1).ok_or_else(overflow)?;
        let lo = disp.checked_add(child.lb).and_then(|v| v.checked_add(span.min(0))).ok_or_else(overflow)?;
        let hi = disp.checked_add(child.ub).and_then(|v| v.checked_add(span.max(0))).ok_or_else(overflow)?;
        let bounds = self.bounds.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi)));
        // The extent, `ub - lb`, must be an address difference too.
        bounds.1.checked_sub(bounds.0).ok_or_else(overflow)?;
        self.bounds = Some(bounds);
        let block = child.one_block.and_then(|(off, len)| {
            let at = disp.checked_add(off)?;
            (count == 1 || stride == len as isize).then(|| Some((at, len.checked_mul(count)?))).flatten()
        });
        if child.size > 0 {
            let tlo = disp.checked_add(child.true_lb).and_then(|v| v.checked_add(span.min(0))).ok_or_else(overflow)?;
            let thi = disp.checked_add(child.true_ub).and_then(|v| v.checked_add(span.max(0))).ok_or_else(overflow)?;
            let data = self.data.map_or((tlo, thi), |(a, b)| (a.min(tlo), b.max(thi)));
            data.1.checked_sub(data.0).ok_or_else(overflow)?;
            self.data = Some(data);
            // One block stays one block while each part starts where the last ended.
            self.one_block = Some(match (self.one_block, block) {
                (None, b) => b,
                (Some(Some((o, l))), Some((bo, bl))) if o + l as isize == bo => Some((o, l + bl)),
                _ => None,
            });
        }
        self.size = child.size.checked_mul(count).and_then(|s| s.checked_add(self.size)).ok_or_else(overflow)?;
        self.basics =
            child.basics.checked_mul(count as u64).and_then(|b| b.checked_add(self.basics)).ok_or_else(overflow)?;
        self.align = self.align.max(child.align);
        self.parts.push(match (&child.node, count) {
            (Node::Bytes { off, len, basic }, _) if count == 1 || stride == *len as isize => {
                Node::Bytes { off: disp + off, len: len * count, basic: *basic }
            }
            _ => Node::Repeat { disp, count, stride, child: child.clone() },
        });
        Ok(())
    }

    /// The typemap placed so far.
    pub fn finish(self) -> Typemap {
        let (lb, ub) = self.bounds.unwrap_or((0, 0));
        let (true_lb, true_ub) = self.data.unwrap_or((0, 0));
        let node = match self.parts.len() {
            1 => self.parts.into_iter().next().unwrap_or(Node::Seq(Vec::new())),
            _ => Node::Seq(self.parts),
        };
        Typemap {
            size: self.size,
            lb,
            ub,
            true_lb,
            true_ub,
            align: self.align,
            basics: self.basics,
            one_block: self.one_block.flatten(),
            node,
            flat: None,
        }
        .with_flat()
    }

    /// As [`TypemapBuilder::finish`], with the extent padded to the
    /// alignment of the strictest member, as a C compiler pads a struct
    /// (`MPI_Type_create_struct`, §5.1.6 "epsilon").
    pub fn finish_struct(self) -> Result<Typemap> {
        let mut t = self.finish();
        let ext = t.extent();
        if ext >= 0 {
            let padded = (ext as usize).checked_next_multiple_of(t.align).ok_or_else(overflow)?;
            t.ub = isize::try_from(padded).ok().and_then(|p| t.lb.checked_add(p)).ok_or_else(overflow)?;
        }
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int() -> Arc<Typemap> {
        Arc::new(Typemap::basic(4, 4, 1))
    }

    fn double() -> Arc<Typemap> {
        Arc::new(Typemap::basic(8, 8, 1))
    }

    #[test]
    fn a_vector_walks_into_its_blocks_and_packs_them_in_order() {
        let mut b = TypemapBuilder::new();
        b.place_strided(&Arc::new(two_ints()), 0, 3, 12).unwrap();
        let l = b.finish();
        assert_eq!(l.blocks().collect::<Vec<_>>(), vec![(0, 8), (12, 8), (24, 8)]);
        assert_eq!((l.size, l.lb, l.ub, l.basics), (24, 0, 32, 6));
        let src: Vec<u8> = (0..36).collect();
        let out = l.pack(&src, 1).unwrap();
        assert_eq!(out, [&src[0..8], &src[12..20], &src[24..32]].concat());
        let mut back = vec![0xffu8; 36];
        l.unpack(&out, &mut back).unwrap();
        assert_eq!(&back[0..8], &src[0..8]);
        assert_eq!(back[8], 0xff);
    }

    fn two_ints() -> Typemap {
        let mut b = TypemapBuilder::new();
        b.place(&int(), 0, 2).unwrap();
        b.finish()
    }

    #[test]
    fn the_kept_walk_is_the_walk_and_only_for_few_blocks() {
        for n in [1usize, 2, FLAT_BLOCKS, FLAT_BLOCKS + 1, 1000] {
            let mut b = TypemapBuilder::new();
            b.place_strided(&int(), 4, n, 12).unwrap();
            let l = b.finish();
            assert_eq!(l.flat.is_some(), n <= FLAT_BLOCKS, "{n} blocks");
            let walked: Vec<_> = l.walk_blocks().collect();
            assert_eq!(l.blocks().collect::<Vec<_>>(), walked);
            assert_eq!(walked.len(), n);
            assert_eq!(walked[n - 1], (4 + 12 * (n as isize - 1), 4));
        }
    }

    /// A vector whose bounds no address holds is refused as too large
    /// (`MPI_ERR_COUNT`), saying which overflow.
    #[test]
    fn a_vector_beyond_the_address_space_is_refused_as_an_overflow() {
        let e = Typemap::vector(3, 1, isize::MAX / 2, &int()).unwrap_err();
        assert_eq!(e, MpiError::TooLarge(crate::error::Overflow::Datatype));
    }

    #[test]
    fn a_vector_of_empty_blocks_is_empty_whatever_its_stride() {
        let v = Typemap::vector(3, 0, 8, &int()).unwrap();
        assert_eq!((v.size, v.lb, v.ub, v.basics, v.blocks().count()), (0, 0, 0, 0, 0));
        let v = Typemap::vector(3, 2, 12, &int()).unwrap();
        assert_eq!((v.size, v.extent()), (24, 32));
        assert_eq!(v.blocks().collect::<Vec<_>>(), vec![(0, 8), (12, 8), (24, 8)]);
    }

    #[test]
    fn a_contiguous_type_is_one_block() {
        let mut b = TypemapBuilder::new();
        b.place(&int(), 0, 1000).unwrap();
        let l = b.finish();
        assert_eq!(l.blocks().collect::<Vec<_>>(), vec![(0, 4000)]);
        assert_eq!(l.one_block, Some((0, 4000)));
        assert_eq!(l.basics, 1000);
        assert!(l.dense());
    }

    /// Packing in chunks gives the bytes packing at once does, whatever the
    /// chunks: vectors, an indexed type (a sequence), a struct with a gap,
    /// a resized type repeated, nested vectors, several elements, and
    /// chunks that start and end inside blocks and inside elements.
    #[test]
    fn packing_and_unpacking_in_chunks_is_packing_at_once() {
        let vec3 = Arc::new(Typemap::vector(3, 2, 12, &int()).unwrap());
        let mut ix = TypemapBuilder::new();
        for (d, n) in [(40isize, 3usize), (0, 1), (20, 2)] {
            ix.place(&int(), d, n).unwrap();
        }
        let ix = Arc::new(ix.finish());
        let mut st = TypemapBuilder::new();
        st.place(&double(), 0, 1).unwrap();
        st.place(&int(), 12, 3).unwrap();
        st.place(&ix, 32, 1).unwrap();
        let st = Arc::new(st.finish_struct().unwrap());
        let resized = Arc::new(vec3.resized(-4, 60).unwrap());
        let nested = Arc::new(Typemap::vector(4, 1, 64, &resized).unwrap());
        for (name, t) in [("vector", vec3), ("indexed", ix), ("struct", st), ("nested", nested)] {
            for count in [1usize, 3] {
                let span = (t.true_ub + t.extent().abs() * count as isize + 64) as usize;
                let base = 8usize;
                let src: Vec<u8> = (0..span + base).map(|i| (i * 7 + 3) as u8).collect();
                let whole = t.pack(&src[base..], count).unwrap();
                for chunk in [1usize, 3, 5, 8, 13, whole.len().max(1)] {
                    let mut out = vec![0u8; whole.len()];
                    let mut back = vec![0u8; src.len()];
                    let mut at = 0;
                    while at < whole.len() {
                        let n = chunk.min(whole.len() - at);
                        // SAFETY: every block of `count` elements lies inside
                        // `src[base..]` and `back[base..]` (pack checked it),
                        // and `at + n` is within the packed length.
                        unsafe {
                            t.pack_range_raw(src[base..].as_ptr(), count, at, &mut out[at..at + n]);
                            t.unpack_range_raw(back[base..].as_mut_ptr(), count, at, &whole[at..at + n]);
                        }
                        at += n;
                    }
                    assert_eq!(out, whole, "{name} x{count}, chunks of {chunk}");
                    let mut expect = vec![0u8; src.len()];
                    t.unpack(&whole, &mut expect[base..]).unwrap();
                    assert_eq!(back, expect, "{name} x{count}, unpacked in chunks of {chunk}");
                }
            }
        }
    }

    /// A chunk in the middle of a vector of 2^31 blocks is reached by
    /// arithmetic: this test would walk 2^30 blocks otherwise.
    #[test]
    fn a_chunk_deep_in_a_huge_vector_is_found_at_once() {
        let v = Typemap::vector(1 << 31, 1, 8, &int()).unwrap();
        let mut runs = Vec::new();
        v.for_range(1, 4 << 30, 10, &mut |o, n| runs.push((o, n)));
        assert_eq!(runs, vec![(8 << 30, 4), ((8 << 30) + 8, 4), ((8 << 30) + 16, 2)]);
    }

    #[test]
    fn a_vector_of_two_billion_blocks_is_one_node() {
        let mut b = TypemapBuilder::new();
        b.place_strided(&int(), 0, 1 << 31, 8).unwrap();
        let l = b.finish();
        assert_eq!(l.size, 4 << 31);
        assert!(matches!(l.node, Node::Repeat { count, .. } if count == 1 << 31));
        assert_eq!(l.blocks().take(2).collect::<Vec<_>>(), vec![(0, 4), (8, 4)]);
        assert_eq!(l.elements_in(12), Some(3));
        assert!(std::mem::size_of_val(&l) < 200);
    }

    #[test]
    fn bytes_for_inverts_elements_in() {
        // { int; double; } as a struct: basics 4 then 8.
        let mut b = TypemapBuilder::new();
        b.place(&int(), 0, 1).unwrap();
        b.place(&double(), 8, 1).unwrap();
        let l = b.finish_struct().unwrap();
        assert_eq!((l.size, l.extent()), (12, 16));
        for n in 0..7 {
            assert_eq!(l.elements_in(l.bytes_for(n)), Some(n), "{n} elements");
        }
        assert_eq!(l.bytes_for(3), 16);
        assert_eq!(l.elements_in(24), Some(4));
        assert_eq!(l.elements_in(14), None);
        assert_eq!(l.elements_in(0), Some(0));
        assert_eq!(double().bytes_for(5), 40);
    }

    #[test]
    fn pair_types_are_laid_out_as_c_structs() {
        let di = Typemap::pair(8, 8);
        assert_eq!((di.size, di.extent(), di.one_block), (12, 16, Some((0, 12))));
        let si = Typemap::pair(2, 2);
        assert_eq!((si.size, si.extent()), (6, 8));
        assert_eq!(si.blocks().collect::<Vec<_>>(), vec![(0, 2), (4, 4)]);
    }

    #[test]
    fn a_resized_type_keeps_its_data_and_moves_its_bounds() {
        let r = int().resized(-4, 12).unwrap();
        assert_eq!((r.lb, r.ub, r.true_lb, r.true_ub, r.extent()), (-4, 8, 0, 4, 12));
        assert!(!r.dense());
        let mut b = TypemapBuilder::new();
        b.place(&Arc::new(r), 0, 3).unwrap();
        let l = b.finish();
        assert_eq!(l.blocks().collect::<Vec<_>>(), vec![(0, 4), (12, 4), (24, 4)]);
    }

    #[test]
    fn safe_packing_refuses_a_buffer_the_elements_do_not_fit() {
        let mut b = TypemapBuilder::new();
        b.place_strided(&int(), 0, 2, 16).unwrap();
        let l = b.finish();
        assert!(l.pack(&[0u8; 19], 1).is_err(), "the second block ends at byte 20");
        assert!(l.pack(&[0u8; 20], 1).is_ok());
        assert!(l.unpack(&[0u8; 8], &mut [0u8; 19]).is_err());
        let neg = int().resized(0, -4).unwrap();
        assert!(neg.pack(&[0u8; 64], 2).is_err(), "a negative extent reaches before the buffer");
    }
}
