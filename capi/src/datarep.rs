//! User data representations' functions (MPI 4.1 §14.5.3): what
//! `MPI_Register_datarep` registered, the file extents it reports, and
//! the conversions of one access, handed to `mpi::io::File` as a
//! [`Conversion`] (the access itself is `mpi`'s, `mpi/src/io/convert.rs`).

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::Arc;

use mpi::io::{Conversion, DataRep, Direction};

use crate::abi::*;
use crate::datatype::{Layout, TypeDef};
use crate::*;

/// `MPI_Datarep_conversion_function`.
type ConvertInt = unsafe extern "C" fn(*mut c_void, Handle, c_int, *mut c_void, i64, *mut c_void) -> c_int;
/// `MPI_Datarep_conversion_function_c`.
type ConvertLarge = unsafe extern "C" fn(*mut c_void, Handle, i64, *mut c_void, i64, *mut c_void) -> c_int;
/// `MPI_Datarep_extent_function`.
type Extent = unsafe extern "C" fn(Handle, *mut isize, *mut c_void) -> c_int;

/// A registered conversion function, in the form it was registered in.
#[derive(Clone, Copy)]
enum Convert {
    Int(ConvertInt),
    Large(ConvertLarge),
}

/// The functions of one registered representation.
#[derive(Clone, Copy)]
pub(crate) struct Functions {
    read: Option<Convert>,
    write: Option<Convert>,
    extent: Extent,
    extra: usize,
}

/// The functions of every representation registered with any.
#[derive(Default)]
pub(crate) struct Registered(HashMap<String, Functions>);

impl Functions {
    /// The functions at these addresses, as `MPI_Register_datarep`
    /// (`large`: `_c`) got them; `MPI_CONVERSION_FN_NULL` is 0.
    ///
    /// # Safety
    /// Each address is 0 (the conversions only) or a function of the type
    /// the standard gives that argument.
    pub(crate) unsafe fn new(
        read: usize,
        write: usize,
        extent: usize,
        extra: *mut c_void,
        large: bool,
    ) -> R<Functions> {
        if extent == 0 {
            return Err(Fail::new(MPI_ERR_ARG, "dtype_file_extent_fn is a null pointer"));
        }
        let convert = |f: usize| {
            (f != 0).then(|| match large {
                // SAFETY: `f` is not 0 and, with `large`, is a function of the MPI_Datarep_conversion_function_c type
                // MPI 4.1 §14.5.3 gives that argument (`new`'s `# Safety`); a function pointer and a `usize` have the
                // same size here.
                true => Convert::Large(unsafe { std::mem::transmute::<usize, ConvertLarge>(f) }),
                // SAFETY: `f` is not 0 and, without `large`, is a function of the MPI_Datarep_conversion_function type
                // MPI 4.1 §14.5.3 gives that argument (`new`'s `# Safety`); a function pointer and a `usize` have the
                // same size here.
                false => Convert::Int(unsafe { std::mem::transmute::<usize, ConvertInt>(f) }),
            })
        };
        Ok(Functions {
            read: convert(read),
            write: convert(write),
            // SAFETY: `extent` is not 0 (checked above) and is a function of the MPI_Datarep_extent_function type MPI
            // 4.1 §14.5.3 gives `dtype_file_extent_fn` (`new`'s `# Safety`); a function pointer and a `usize` have the
            // same size here.
            extent: unsafe { std::mem::transmute::<usize, Extent>(extent) },
            extra: extra as usize,
        })
    }

    /// The file extent of predefined datatype `dt` (`dtype_file_extent_fn`).
    fn extent_of(&self, dt: Handle, layout: &Arc<Layout>) -> R<isize> {
        let mut x: isize = -1;
        // SAFETY: `extent` is the user's function of the standard's type
        // (`Functions::new`), given a predefined datatype and a place to
        // write the extent.
        let rc = crate::process::as_user_fn(dt, Some(layout), || unsafe {
            (self.extent)(dt, &mut x, self.extra as *mut c_void)
        });
        if rc != MPI_SUCCESS {
            return Err(Fail::new(
                MPI_ERR_CONVERSION,
                format!("dtype_file_extent_fn returned {rc} for datatype {dt:#x}"),
            ));
        }
        Ok(x)
    }
}

impl Registered {
    /// Keep `name`'s functions (when it has conversions).
    pub(crate) fn insert(&mut self, name: String, f: Functions) {
        if f.read.is_some() || f.write.is_some() {
            self.0.insert(name, f);
        }
    }

    /// The functions of `rep`, when it is a user representation with
    /// conversions.
    fn of(&self, rep: &DataRep) -> Option<&Functions> {
        match rep {
            DataRep::User(name) => self.0.get(name),
            _ => None,
        }
    }
}

impl State {
    /// Check that every predefined datatype `dt` is built of takes as many
    /// bytes in `rep`'s files as in memory: a representation that changes
    /// sizes would move the view's bytes, which is not provided.
    pub(crate) fn check_file_extents(&self, rep: &DataRep, dt: Handle) -> R<()> {
        let Some(f) = self.datarep_fns.of(rep) else { return Ok(()) };
        let mut leaves = Vec::new();
        self.predefined_leaves(dt, None, &mut leaves)?;
        leaves.sort_unstable();
        leaves.dedup();
        for leaf in leaves {
            let layout = self.layout(leaf)?;
            let x = f.extent_of(leaf, &layout)?;
            if x != layout.size as isize {
                return Err(Fail::new(
                    MPI_ERR_UNSUPPORTED_DATAREP,
                    format!(
                        "data representation {:?} stores datatype {leaf:#x} in {x} bytes and it has {} here: representations that change an element's size are not provided, only those that keep it (docs/guide/io.md)",
                        rep.name(),
                        layout.size
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The predefined datatypes `dt` is built of.
    fn predefined_leaves(&self, dt: Handle, def: Option<&TypeDef>, out: &mut Vec<Handle>) -> R<()> {
        let def = match def.or_else(|| self.types.get(&dt).map(|e| &*e.def)) {
            Some(d) => d,
            None => {
                self.layout(dt)?;
                out.push(dt);
                return Ok(());
            }
        };
        let parts = &def.contents().types;
        if parts.is_empty() {
            // MPI_Type_create_f90_*: predefined types of their own (§19.1.9).
            out.push(dt);
        }
        for (h, d) in parts {
            self.predefined_leaves(*h, d.as_deref(), out)?;
        }
        Ok(())
    }

    /// The file extent of `dt` in `rep`'s files (`MPI_File_get_type_extent`,
    /// §14.5.2): the registered function's answer for a predefined
    /// datatype, and the extent here otherwise (sizes are kept, see
    /// [`State::check_file_extents`]).
    pub(crate) fn file_extent(&self, rep: &DataRep, dt: Handle) -> R<isize> {
        let layout = self.layout(dt)?;
        match self.datarep_fns.of(rep) {
            Some(f) if !self.types.contains_key(&dt) => f.extent_of(dt, &layout),
            _ => Ok(layout.extent()),
        }
    }

    /// The conversion of an access of `count` elements of `dt` at `buf`
    /// in `direction` through `rep`, when `rep` converts that way.
    pub(crate) fn conversion(
        &self,
        rep: &DataRep,
        direction: Direction,
        buf: *mut c_void,
        dt: Handle,
    ) -> R<Option<Converting>> {
        let Some(f) = self.datarep_fns.of(rep) else { return Ok(None) };
        let func = match direction {
            Direction::Read => f.read,
            Direction::Write => f.write,
        };
        let Some(func) = func else { return Ok(None) };
        self.check_file_extents(rep, dt)?;
        Ok(Some(Converting { func, extra: f.extra, buf, dt, layout: self.layout(dt)? }))
    }
}

/// One access's conversion: the user's function, buffer and datatype.
pub(crate) struct Converting {
    func: Convert,
    extra: usize,
    buf: *mut c_void,
    dt: Handle,
    layout: Arc<Layout>,
}

impl Converting {
    /// Call the function on `items` items from `position` on, with the
    /// file buffer at `file`, a chunk of at most `c_int::MAX` items at a
    /// time for the `int` form.
    fn call(&self, file: *mut u8, items: u64, position: u64, what: &str) -> mpi::Result<()> {
        let mut done = 0u64;
        while done < items {
            let n = match self.func {
                Convert::Int(_) => (items - done).min(c_int::MAX as u64),
                Convert::Large(_) => items - done,
            };
            let at = self.layout.bytes_for(position + done) - self.layout.bytes_for(position);
            let pos = (position + done) as i64;
            // SAFETY: the function is the user's, of the standard's type
            // (`Functions::new`). `buf` holds the access's elements (the
            // MPI call's contract, kept by `access`), and `file + at` has
            // room for the `n` items from `at` on: `File::access_converted`
            // sized it for all of them.
            let rc = crate::process::as_user_fn(self.dt, Some(&self.layout), || unsafe {
                let file = file.add(at as usize).cast();
                let extra = self.extra as *mut c_void;
                match self.func {
                    Convert::Int(f) => f(self.buf, self.dt, n as c_int, file, pos, extra),
                    Convert::Large(f) => f(self.buf, self.dt, n as i64, file, pos, extra),
                }
            });
            if rc != MPI_SUCCESS {
                return Err(mpi::MpiError::Conversion(mpi::ConversionError::UserFunction {
                    direction: what.into(),
                    code: rc,
                }));
            }
            done += n;
        }
        Ok(())
    }
}

impl Conversion for Converting {
    fn whole_items(&self, bytes: u64) -> (u64, u64) {
        if let Some(n) = self.layout.elements_in(bytes) {
            return (n, bytes);
        }
        // The largest count of items that fits, by bisection.
        let (mut lo, mut hi) = (0u64, bytes);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            match self.layout.bytes_for(mid) <= bytes {
                true => lo = mid,
                false => hi = mid - 1,
            }
        }
        (lo, self.layout.bytes_for(lo))
    }

    fn encode(&self, file: &mut [u8], items: u64, position: u64) -> mpi::Result<()> {
        self.call(file.as_mut_ptr(), items, position, "write")
    }

    fn decode(&self, file: &[u8], items: u64, position: u64) -> mpi::Result<()> {
        // The function reads `file` only; its C type takes a mutable pointer.
        self.call(file.as_ptr().cast_mut(), items, position, "read")
    }
}
