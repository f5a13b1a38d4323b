//! The Fortran bindings of the DIMMnet-2 stack's MPI (MPI 4.1 chapter 19:
//! `mpif.h` and `use mpi`), layered on the MPI 5.0 standard ABI the way
//! the ABI chapter meant: a glue library that calls only the C functions
//! of `libmpi_abi.so.1`, converting handles with `MPI_*_fromint` and
//! `MPI_*_toint`, and tells the library the Fortran sizes and `LOGICAL`
//! values with `MPI_Abi_set_fortran_info` and `MPI_Abi_set_fortran_booleans`.
//!
//! Nothing here keeps a list of MPI functions. The bindings are generated
//! from `abi_def::FUNCTIONS`, the table that also generates `mpi.h`:
//! each C prototype is classified parameter by parameter ([`arg`]), and a
//! function the generator cannot bind is either written by hand in
//! `fortran/glue/special.c` ([`HAND_WRITTEN`]) or listed with the reason it
//! is not bound ([`not_bound`]). A test fails on a C function that is none
//! of these.
//!
//! `cargo run -p mpi-fortran --bin gen-fortran DIR` writes `mpif.h`,
//! `mpi.f90` (module `mpi`), `mpi_f08.f90` (module `mpi_f08`) and
//! `mpif_glue.c` into DIR;
//! `scripts/install.sh` compiles them with the machine's Fortran compiler.

pub mod arg;
pub mod f08;
pub mod glue;
pub mod proto;
pub mod source;

use arg::{Arg, Kind, Shape};
use proto::Proto;

/// How one C function reaches Fortran.
#[derive(Clone, Debug)]
pub enum Binding {
    /// Glue and interface generated from the prototype.
    Generated {
        /// The C prototype.
        proto: Proto,
        /// Its parameters as Fortran sees them, in order.
        args: Vec<Arg>,
    },
    /// Glue written by hand in `fortran/glue/special.c`; the interface is
    /// generated from the Fortran arguments listed in [`HAND_WRITTEN`].
    HandWritten {
        /// The C prototype.
        proto: Proto,
        /// The Fortran dummy arguments (before `ierror`).
        args: Vec<(String, Arg)>,
        /// Whether the Fortran procedure has an `ierror` argument.
        ierror: bool,
    },
    /// No Fortran binding, and why.
    NotBound {
        /// The C prototype.
        proto: Proto,
        /// Why.
        why: &'static str,
    },
}

impl Binding {
    /// Whether `mpif.h` and module `mpi` have it: not the large-count
    /// `_c` forms, which only `mpi_f08` has (MPI 4.1 §19.1.1).
    pub fn in_mpi(&self) -> bool {
        !matches!(self, Binding::NotBound { .. }) && !self.is_large_count()
    }

    /// Whether module `mpi_f08` has it: not the deprecated attribute
    /// functions that it leaves out (`MPI_ATTR_*`, `MPI_KEYVAL_*`, §19.1.2).
    pub fn in_mpi_f08(&self) -> bool {
        let name = self.name();
        !matches!(self, Binding::NotBound { .. }) && !name.starts_with("MPI_Attr_") && !name.starts_with("MPI_Keyval_")
    }

    /// A large-count form (`MPI_Send_c`).
    pub fn is_large_count(&self) -> bool {
        self.name().ends_with("_c")
    }

    /// The C function's name.
    pub fn name(&self) -> &str {
        match self {
            Binding::Generated { proto, .. } | Binding::HandWritten { proto, .. } | Binding::NotBound { proto, .. } => {
                &proto.name
            }
        }
    }

    /// The Fortran dummy arguments (before `ierror`), and whether `ierror`
    /// follows, of a bound function.
    pub fn fortran_args(&self) -> Option<(Vec<(String, Arg)>, bool)> {
        match self {
            Binding::Generated { proto, args } => Some((
                proto.params.iter().map(|p| p.name.clone()).zip(args.iter().cloned()).collect(),
                proto.ret == "int",
            )),
            Binding::HandWritten { args, ierror, .. } => Some((args.clone(), *ierror)),
            Binding::NotBound { .. } => None,
        }
    }
}

/// `MPI_*_get_attr(obj, keyval, attribute_val, flag)` for one kind of object.
macro_rules! get_attr {
    ($obj:literal, $ty:literal, $key:literal) => {
        &[($obj, FArg::Handle($ty)), ($key, FArg::Int), ("attribute_val", FArg::AddressOut), ("flag", FArg::LogicalOut)]
    };
}

/// `MPI_*_set_attr(obj, keyval, attribute_val)` for one kind of object.
macro_rules! set_attr {
    ($obj:literal, $ty:literal, $key:literal) => {
        &[($obj, FArg::Handle($ty)), ($key, FArg::Int), ("attribute_val", FArg::Address)]
    };
}

/// `MPI_*_create_keyval(copy, delete, keyval, extra_state)`, with the
/// standard's names for the dummies (a caller may pass them by keyword).
macro_rules! create_keyval {
    ($copy:literal, $delete:literal, $key:literal) => {
        &[($copy, FArg::Procedure), ($delete, FArg::Procedure), ($key, FArg::IntOut), ("extra_state", FArg::Address)]
    };
}

/// The functions whose glue is written by hand, and their Fortran
/// arguments (MPI 4.1 §19.1 and the function's own section): those with
/// procedure arguments (a trampoline calls the Fortran procedure with
/// Fortran arguments), those whose Fortran form drops C's arguments
/// (`MPI_Init`'s `argc`/`argv`), and the attribute setters and getters (a
/// Fortran value is stored boxed, so that C reads a pointer to it, §19.3.7;
/// a predefined attribute is a pointer in C and its value in Fortran).
pub const HAND_WRITTEN: &[HandWritten] = &[
    ("MPI_Init", &[], true),
    (
        "MPI_Op_create_c",
        &[("user_fn", FArg::Procedure), ("commute", FArg::Logical), ("op", FArg::HandleOut("MPI_Op"))],
        true,
    ),
    ("MPI_Init_thread", &[("required", FArg::Int), ("provided", FArg::IntOut)], true),
    ("MPI_Info_create_env", &[("info", FArg::HandleOut("MPI_Info"))], true),
    ("MPI_Pcontrol", &[("level", FArg::Int)], false),
    (
        "MPI_Op_create",
        &[("user_fn", FArg::Procedure), ("commute", FArg::Logical), ("op", FArg::HandleOut("MPI_Op"))],
        true,
    ),
    (
        "MPI_Comm_create_errhandler",
        &[("comm_errhandler_fn", FArg::Procedure), ("errhandler", FArg::HandleOut("MPI_Errhandler"))],
        true,
    ),
    (
        "MPI_Win_create_errhandler",
        &[("win_errhandler_fn", FArg::Procedure), ("errhandler", FArg::HandleOut("MPI_Errhandler"))],
        true,
    ),
    (
        "MPI_File_create_errhandler",
        &[("file_errhandler_fn", FArg::Procedure), ("errhandler", FArg::HandleOut("MPI_Errhandler"))],
        true,
    ),
    (
        "MPI_Session_create_errhandler",
        &[("session_errhandler_fn", FArg::Procedure), ("errhandler", FArg::HandleOut("MPI_Errhandler"))],
        true,
    ),
    ("MPI_Comm_create_keyval", create_keyval!("comm_copy_attr_fn", "comm_delete_attr_fn", "comm_keyval"), true),
    ("MPI_Type_create_keyval", create_keyval!("type_copy_attr_fn", "type_delete_attr_fn", "type_keyval"), true),
    ("MPI_Win_create_keyval", create_keyval!("win_copy_attr_fn", "win_delete_attr_fn", "win_keyval"), true),
    (
        "MPI_Keyval_create",
        &[
            ("copy_fn", FArg::Procedure),
            ("delete_fn", FArg::Procedure),
            ("keyval", FArg::IntOut),
            ("extra_state", FArg::Int),
        ],
        true,
    ),
    ("MPI_Comm_set_attr", set_attr!("comm", "MPI_Comm", "comm_keyval"), true),
    ("MPI_Type_set_attr", set_attr!("datatype", "MPI_Datatype", "type_keyval"), true),
    ("MPI_Win_set_attr", set_attr!("win", "MPI_Win", "win_keyval"), true),
    ("MPI_Comm_get_attr", get_attr!("comm", "MPI_Comm", "comm_keyval"), true),
    ("MPI_Type_get_attr", get_attr!("datatype", "MPI_Datatype", "type_keyval"), true),
    ("MPI_Win_get_attr", get_attr!("win", "MPI_Win", "win_keyval"), true),
    (
        "MPI_Attr_get",
        &[
            ("comm", FArg::Handle("MPI_Comm")),
            ("keyval", FArg::Int),
            ("attribute_val", FArg::IntOut),
            ("flag", FArg::LogicalOut),
        ],
        true,
    ),
    ("MPI_Attr_put", &[("comm", FArg::Handle("MPI_Comm")), ("keyval", FArg::Int), ("attribute_val", FArg::Int)], true),
    (
        "MPI_Info_get_string",
        &[
            ("info", FArg::Handle("MPI_Info")),
            ("key", FArg::StrIn),
            ("buflen", FArg::IntOut),
            ("value", FArg::StrOut),
            ("flag", FArg::LogicalOut),
        ],
        true,
    ),
    (
        "MPI_Comm_spawn",
        &[
            ("command", FArg::StrIn),
            ("argv", FArg::StrArray),
            ("maxprocs", FArg::Int),
            ("info", FArg::Handle("MPI_Info")),
            ("root", FArg::Int),
            ("comm", FArg::Handle("MPI_Comm")),
            ("intercomm", FArg::HandleOut("MPI_Comm")),
            ("array_of_errcodes", FArg::IntArray),
        ],
        true,
    ),
    (
        "MPI_Comm_spawn_multiple",
        &[
            ("count", FArg::Int),
            ("array_of_commands", FArg::StrArray),
            ("array_of_argv", FArg::StrTable("count")),
            ("array_of_maxprocs", FArg::IntArray),
            ("array_of_info", FArg::HandleArray("MPI_Info")),
            ("root", FArg::Int),
            ("comm", FArg::Handle("MPI_Comm")),
            ("intercomm", FArg::HandleOut("MPI_Comm")),
            ("array_of_errcodes", FArg::IntArray),
        ],
        true,
    ),
    (
        "MPI_Grequest_start",
        &[
            ("query_fn", FArg::Procedure),
            ("free_fn", FArg::Procedure),
            ("cancel_fn", FArg::Procedure),
            ("extra_state", FArg::Address),
            ("request", FArg::HandleOut("MPI_Request")),
        ],
        true,
    ),
];

/// A hand-written binding: the C function, its Fortran dummy arguments
/// (before `ierror`), and whether `ierror` follows.
pub type HandWritten = (&'static str, &'static [(&'static str, FArg)], bool);

/// A Fortran dummy argument of a hand-written binding (a `const` form of
/// the few [`Arg`]s they use).
#[derive(Clone, Copy, Debug)]
pub enum FArg {
    /// `INTEGER`.
    Int,
    /// `INTEGER`, written.
    IntOut,
    /// `LOGICAL`.
    Logical,
    /// `LOGICAL`, written.
    LogicalOut,
    /// A handle.
    Handle(&'static str),
    /// A handle, written.
    HandleOut(&'static str),
    /// `INTEGER(KIND=MPI_ADDRESS_KIND)`.
    Address,
    /// `INTEGER(KIND=MPI_ADDRESS_KIND)`, written.
    AddressOut,
    /// `EXTERNAL`.
    Procedure,
    /// `CHARACTER(LEN=*)`, read.
    StrIn,
    /// `CHARACTER(LEN=*)`, written.
    StrOut,
    /// `INTEGER x(*)`, read or written.
    IntArray,
    /// A handle array, read.
    HandleArray(&'static str),
    /// `CHARACTER(LEN=*) x(*)`, read.
    StrArray,
    /// `CHARACTER(LEN=*) x(rows,*)`, read; `rows` is another dummy.
    StrTable(&'static str),
}

impl FArg {
    fn arg(self) -> Arg {
        match self {
            FArg::Int => Arg::Int,
            FArg::IntOut => Arg::IntRef(Shape::Scalar),
            FArg::Logical => Arg::Logical,
            FArg::LogicalOut => Arg::LogicalOut,
            FArg::Handle(t) => Arg::Handle(t.to_string()),
            FArg::HandleOut(t) => Arg::HandleRef(t.to_string()),
            FArg::Address => Arg::AddressIn,
            FArg::AddressOut => Arg::KindRef(Kind::Address, Shape::Scalar),
            FArg::Procedure => Arg::Procedure,
            FArg::StrIn => Arg::StrIn,
            FArg::StrOut => Arg::StrOut,
            FArg::IntArray => Arg::IntRef(Shape::Array),
            FArg::HandleArray(t) => Arg::HandleArray { ty: t.to_string(), len: String::new(), out: false },
            FArg::StrArray => Arg::StrArray,
            FArg::StrTable(rows) => Arg::StrTable { rows: rows.to_string() },
        }
    }
}

/// Why `name` has no Fortran binding, if it has none.
pub fn not_bound(name: &str) -> Option<&'static str> {
    let why = if name.starts_with("MPI_T_") {
        "the tool information interface has no Fortran binding (MPI 4.1 §15.3)"
    } else if name.ends_with("_toint")
        || name.ends_with("_fromint")
        || name.ends_with("_f2c")
        || name.ends_with("_c2f")
        || name.contains("_f082")
        || name.contains("_c2f08")
        || name.contains("_f2f08")
    {
        "a C-only conversion between C and Fortran handles or statuses (MPI 4.1 §19.3.4)"
    } else if name.starts_with("MPI_Abi_") && name.contains("fortran") {
        "the Fortran layer's own calls into the C library (MPI 5.0, the ABI chapter): the glue makes them at MPI_INIT"
    } else if name == "MPI_Register_datarep" || name == "MPI_Register_datarep_c" {
        "its callbacks (the extent function, and conversion functions when they are provided) would need trampolines of their own; C has it"
    } else {
        return None;
    };
    Some(why)
}

/// Why the bindings cannot be generated.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GenError {
    /// A prototype of the ABI's table that cannot be read.
    #[error(transparent)]
    Proto(#[from] proto::ProtoError),
    /// Functions that are neither bound, hand-written nor explained.
    #[error(
        "{} functions of mpi.h have no Fortran binding and no reason given (bind them by hand in \
         fortran/glue/special.c and list them in HAND_WRITTEN, or say why in not_bound):\n  {}",
        .0.len(),
        .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n  ")
    )]
    Unexplained(Vec<arg::Unbindable>),
}

/// Every C function of the ABI and how it reaches Fortran, or an error
/// naming each function the generator can neither bind nor explain.
pub fn bindings() -> Result<Vec<Binding>, GenError> {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for text in abi_def::FUNCTIONS {
        let proto = proto::parse(text)?;
        if let Some(why) = not_bound(&proto.name) {
            out.push(Binding::NotBound { proto, why });
            continue;
        }
        if let Some((_, args, ierror)) = HAND_WRITTEN.iter().find(|(n, _, _)| *n == proto.name) {
            let args = args.iter().map(|(n, a)| (n.to_string(), a.arg())).collect();
            out.push(Binding::HandWritten { proto, args, ierror: *ierror });
            continue;
        }
        if !matches!(proto.ret.as_str(), "int" | "double" | "MPI_Aint") || proto.variadic {
            errors.push(arg::Unbindable::Return { func: proto.name.clone(), ret: proto.ret.clone() });
            continue;
        }
        let mut args = Vec::new();
        let mut bad = None;
        for p in &proto.params {
            match arg::classify(&proto.name, p) {
                Ok(Arg::Procedure) => {
                    bad = Some(arg::Unbindable::Procedure { func: proto.name.clone(), param: p.name.clone() })
                }
                Ok(a) => args.push(a),
                Err(e) => bad = Some(e),
            }
        }
        match bad {
            Some(e) => errors.push(e),
            None => out.push(Binding::Generated { proto, args }),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(GenError::Unexplained(errors))
    }
}

/// The Fortran (and C glue) symbol of `name`: gfortran's, lower case and
/// one trailing underscore.
pub fn symbol(name: &str) -> String {
    format!("{}_", name.to_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every function of the C ABI is bound (generated or by hand) or
    /// listed as not bound, with a reason: a function added to `mpi.h`
    /// fails this test until it is one of the three.
    #[test]
    fn every_c_function_is_bound_or_explained() {
        let all = bindings().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(all.len(), abi_def::FUNCTIONS.len());
        let generated = all.iter().filter(|b| matches!(b, Binding::Generated { .. })).count();
        assert!(generated > 300, "only {generated} generated bindings");
    }

    /// Every hand-written binding is in `glue/special.c`, and every hand
    /// list entry names a function of the ABI.
    #[test]
    fn hand_written_glue_exists_for_each_listed_function() {
        let special = include_str!("../glue/special.c");
        let names: Vec<&str> = abi_def::FUNCTIONS
            .iter()
            .filter_map(|f| proto::parse(f).ok().map(|p| p.name))
            .map(|n| &*Box::leak(n.into_boxed_str()))
            .collect();
        for (name, _, _) in HAND_WRITTEN {
            assert!(names.contains(name), "{name} is not a function of mpi.h");
            let base = glue::base_name(name);
            let both = special.contains(&format!("MPIF_NAMES(glue_{base}, {base})"));
            let apart = special.contains(&format!("MPIF_NAMES_OLD(glue_{base}, {base})"))
                && special.contains(&format!("MPIF_NAMES_F08(glue_{base}_f08, {base})"));
            assert!(both || apart, "glue/special.c names no {name}");
        }
    }

    #[test]
    fn the_everyday_functions_are_generated_with_the_right_arguments() {
        let all = bindings().unwrap();
        let find = |n: &str| all.iter().find(|b| b.name() == n).unwrap().clone();
        let Binding::Generated { args, .. } = find("MPI_Waitany") else { panic!("MPI_Waitany") };
        assert_eq!(args[2], Arg::IndexOut);
        let Binding::Generated { args, .. } = find("MPI_Iprobe") else { panic!("MPI_Iprobe") };
        assert_eq!(args[3], Arg::LogicalOut);
        let Binding::Generated { args, .. } = find("MPI_Cart_create") else { panic!("MPI_Cart_create") };
        assert!(matches!(args[3], Arg::LogicalArray { out: false, .. }) && args[4] == Arg::Logical);
        let Binding::Generated { args, .. } = find("MPI_Win_allocate") else { panic!("MPI_Win_allocate") };
        assert_eq!(args[4], Arg::AddressOut);
        let send_c = find("MPI_Send_c");
        assert!(matches!(send_c, Binding::Generated { .. }) && !send_c.in_mpi() && send_c.in_mpi_f08());
        assert!(find("MPI_Attr_get").in_mpi() && !find("MPI_Attr_get").in_mpi_f08());
        assert!(matches!(find("MPI_T_init_thread"), Binding::NotBound { .. }));
        assert!(matches!(find("MPI_Op_create"), Binding::HandWritten { .. }));
    }
}
