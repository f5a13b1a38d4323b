//! User-defined reduction operations (MPI 4.1 §6.9.5): `MPI_Op_create`,
//! its large-count form, `MPI_Op_free` and `MPI_Op_commutative`, and the
//! operation a reduction's `op` handle names.
//!
//! A user function runs inside the reduction that calls it, on the
//! predefined datatypes the library reduces (the datatype handle it gets
//! is the one the caller passed). The standard lets it query its datatype
//! and call `MPI_Abort`, but no communication function: inside it, the
//! predefined datatypes' size and extent queries and `MPI_Abort` work
//! without the state (which the running reduction holds), and any other
//! MPI call ends the job with a message (see `lock` in lib.rs) instead of
//! deadlocking.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use mpi::coll::{Operation, RawUserFn, Reducible, SystemOperation};
use mpi::staged::reduce::AnyOperation;

use crate::abi::*;
use crate::datatype::Layout;
use crate::*;

/// `MPI_User_function`.
type UserFn = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut Handle);
/// `MPI_User_function_c` (`len` as an `MPI_Count`).
type UserFnC = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut i64, *mut Handle);

/// The C function of a user-defined operation.
#[derive(Clone, Copy)]
pub(crate) enum UserFunction {
    Int(UserFn),
    Large(UserFnC),
}

/// A user-defined operation (`MPI_Op_create`).
#[derive(Clone, Copy)]
pub(crate) struct UserOp {
    f: UserFunction,
    commute: bool,
}

impl UserOp {
    /// Call the function on `n` elements of `dt` at `src` and `acc`.
    ///
    /// # Safety
    /// Both point to `n` elements of `dt`, aligned for it.
    unsafe fn call(&self, src: *mut c_void, acc: *mut c_void, n: usize, dt: Handle, layout: Option<&Arc<Layout>>) {
        let mut dt = dt;
        crate::process::as_user_fn(dt, layout, || {
            // SAFETY: `src` and `acc` each point to `n` elements of `dt`, aligned for it, readable and writable for
            // this call (`call`'s `# Safety`), and `len` and `dt` are locals; `f` is the function MPI_Op_create(_c)
            // registered, of the MPI_User_function(_c) type MPI 4.1 §6.9.5 gives that argument, and is called with that
            // signature.
            unsafe {
                match self.f {
                    UserFunction::Int(f) => {
                        // Every reduction here takes an int count (there are no
                        // large-count reductions), so `n` fits.
                        let mut len = c_int::try_from(n).unwrap_or(c_int::MAX);
                        f(src, acc, &mut len, &mut dt)
                    }
                    UserFunction::Large(f) => {
                        let mut len = n as i64;
                        f(src, acc, &mut len, &mut dt)
                    }
                }
            }
        })
    }
}

/// A user function on elements of datatype `dt` (laid out as `layout` when
/// it is derived), as the mpi crate hands it raw elements
/// (`Operation::from_raw`, `from_raw_typed`).
struct OnType {
    op: UserOp,
    dt: Handle,
    layout: Option<Arc<Layout>>,
}

impl RawUserFn for OnType {
    unsafe fn apply(&self, src: *mut u8, acc: *mut u8, n: usize) {
        // SAFETY: `src` and `acc` are aligned to 16 bytes (every predefined type's alignment) and hold `n` elements
        // of `dt` each, readable and writable for this call (`apply`'s `# Safety`): `call`'s `# Safety`.
        unsafe { self.op.call(src.cast(), acc.cast(), n, self.dt, self.layout.as_ref()) }
    }
}

/// The operation a reduction's `op` handle names, for elements of `dt`.
pub(crate) enum OpChoice {
    System(SystemOperation),
    /// A user function on a predefined datatype `dt`, or on a derived one
    /// whose elements are reduced packed (its layout given).
    User(UserOp, Handle, Option<Arc<Layout>>),
}

impl mpi::staged::reduction::ReduceOp for OpChoice {
    fn predefined(&self) -> Option<SystemOperation> {
        match self {
            OpChoice::System(o) => Some(*o),
            OpChoice::User(..) => None,
        }
    }

    fn on_elements(self, layout: Arc<Layout>) -> Self {
        match self {
            OpChoice::User(u, dt, _) => OpChoice::User(u, dt, Some(layout)),
            system => system,
        }
    }
}

impl AnyOperation for OpChoice {
    fn on<T: Reducible>(&self) -> mpi::Result<Operation> {
        match self {
            OpChoice::System(o) => Operation::system::<T>(*o),
            OpChoice::User(u, dt, None) => {
                let f = OnType { op: *u, dt: *dt, layout: None };
                Ok(Operation::from_raw(std::mem::size_of::<T>(), u.commute, f))
            }
            OpChoice::User(u, dt, Some(l)) => {
                let f = OnType { op: *u, dt: *dt, layout: Some(l.clone()) };
                Operation::from_raw_typed(l.clone(), u.commute, f)
            }
        }
    }
}

/// The predefined operation a handle names.
pub(crate) fn system_op(op: Handle) -> R<SystemOperation> {
    Ok(match op {
        MPI_SUM => SystemOperation::Sum,
        MPI_PROD => SystemOperation::Product,
        MPI_MIN => SystemOperation::Min,
        MPI_MAX => SystemOperation::Max,
        MPI_LAND => SystemOperation::LogicalAnd,
        MPI_LOR => SystemOperation::LogicalOr,
        MPI_LXOR => SystemOperation::LogicalXor,
        MPI_BAND => SystemOperation::BitwiseAnd,
        MPI_BOR => SystemOperation::BitwiseOr,
        MPI_BXOR => SystemOperation::BitwiseXor,
        MPI_MINLOC => SystemOperation::MinLoc,
        MPI_MAXLOC => SystemOperation::MaxLoc,
        MPI_OP_NULL => return Err(Fail::new(MPI_ERR_OP, "MPI_OP_NULL is not an operation")),
        MPI_REPLACE | MPI_NO_OP => {
            return Err(Fail::new(MPI_ERR_OP, "MPI_REPLACE and MPI_NO_OP are for one-sided accumulates only (§12.3.4)"))
        }
        other => return Err(Fail::new(MPI_ERR_OP, format!("{other:#x} is not an operation this library has"))),
    })
}

/// The operation `op` names, applied to elements of datatype `dt`.
pub(crate) fn op_of(st: &State, op: Handle, dt: Handle) -> R<OpChoice> {
    match st.ops.get(&op) {
        Some(u) => Ok(OpChoice::User(*u, dt, None)),
        None => system_op(op).map(OpChoice::System),
    }
}

/// Register a user function as a new operation handle.
///
/// # Safety
/// `op` is null or writable.
unsafe fn create(st: &mut State, f: UserFunction, commute: c_int, op: *mut Handle) -> R<()> {
    if op.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "op is a null pointer"));
    }
    let h = st.new_handle();
    st.ops.insert(h, UserOp { f, commute: commute != 0 });
    // SAFETY: `op` is not null (checked above) and valid for writing one handle for this call (`create`'s `# Safety`:
    // the out-argument of MPI_Op_create(_c)).
    unsafe { op.write(h) };
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Op_create(user_fn: Option<UserFn>, commute: c_int, op: *mut Handle) -> c_int {
    with_state("MPI_Op_create", MPI_COMM_WORLD, |st| {
        let f = user_fn.ok_or_else(|| Fail::new(MPI_ERR_ARG, "user_fn is a null pointer"))?;
        // SAFETY: `op` is MPI_Op_create's out-argument (MPI 4.1 §6.9.5), null or valid for writing one handle for this
        // call: `create`'s `# Safety`.
        unsafe { create(st, UserFunction::Int(f), commute, op) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Op_create_c(user_fn: Option<UserFnC>, commute: c_int, op: *mut Handle) -> c_int {
    with_state("MPI_Op_create_c", MPI_COMM_WORLD, |st| {
        let f = user_fn.ok_or_else(|| Fail::new(MPI_ERR_ARG, "user_fn is a null pointer"))?;
        // SAFETY: `op` is MPI_Op_create_c's out-argument (MPI 4.1 §6.9.5), null or valid for writing one handle for
        // this call: `create`'s `# Safety`.
        unsafe { create(st, UserFunction::Large(f), commute, op) }
    })
}

/// `MPI_Op_free`: the handle becomes `MPI_OP_NULL`; a reduction already
/// started with it completes (it holds the function itself).
#[no_mangle]
pub unsafe extern "C" fn MPI_Op_free(op: *mut Handle) -> c_int {
    with_state("MPI_Op_free", MPI_COMM_WORLD, |st| {
        // SAFETY: `op` is MPI_Op_free's in/out handle argument (MPI 4.1 §6.9.5), null or readable and writable for one
        // handle for this call; `read_arg` refuses null.
        let h = unsafe { read_arg(op, "op")? };
        if st.ops.remove(&h).is_none() {
            let what = if system_op(h).is_ok() {
                "a predefined operation, which cannot be freed"
            } else {
                "not an operation (never created, or freed)"
            };
            return Err(Fail::new(MPI_ERR_OP, format!("{h:#x} is {what}")));
        }
        // SAFETY: `op` was read above, so it is not null; the standard makes it writable (§6.9.5).
        unsafe { put(op, MPI_OP_NULL, "op") }
    })
}

/// `MPI_Op_commutative`: the predefined reductions commute; `MPI_REPLACE`
/// and `MPI_NO_OP` (the accumulate operations, which keep one operand)
/// do not.
#[no_mangle]
pub unsafe extern "C" fn MPI_Op_commutative(op: Handle, commute: *mut c_int) -> c_int {
    with_state("MPI_Op_commutative", MPI_COMM_WORLD, |st| {
        let c = match st.ops.get(&op) {
            Some(u) => u.commute,
            None if op == MPI_REPLACE || op == MPI_NO_OP => false,
            None => system_op(op).map(|_| true)?,
        };
        // SAFETY: `commute` is MPI_Op_commutative's out-argument, null or valid for writing one `int` for this call;
        // `put` refuses null.
        unsafe { put(commute, c_int::from(c), "commute") }
    })
}
