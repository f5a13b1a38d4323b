//! Every exported function's Rust signature against its C prototype in
//! `mpi.h` (`abi::FUNCTIONS`): same number of parameters, and each of the
//! same kind and size (an `int` where C has `int`, an `MPI_Count *` where
//! C has `MPI_Count *`, ...). A mismatch compiles and links, and then
//! reads or writes the wrong number of bytes in the caller's memory; the
//! export test in sim-tests compares only the names.

use std::collections::BTreeMap;

/// What a parameter is at the ABI level.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Kind {
    Int,
    Count,
    Aint,
    Double,
    Handle,
    /// A pointer, and what it points at (its elements' kind).
    Ptr(Box<Kind>),
    Void,
    Char,
    Status,
    /// A function pointer (a user callback).
    Function,
}

/// The C type of a handle.
const C_HANDLES: &[&str] = &[
    "MPI_Comm",
    "MPI_Datatype",
    "MPI_Group",
    "MPI_Info",
    "MPI_Op",
    "MPI_Request",
    "MPI_Errhandler",
    "MPI_Message",
    "MPI_Win",
    "MPI_Session",
    "MPI_File",
    "MPI_T_enum",
    "MPI_T_cvar_handle",
    "MPI_T_pvar_handle",
    "MPI_T_pvar_session",
    "MPI_T_event_registration",
    "MPI_T_event_instance",
];

/// The kind of a C type (without the parameter's name).
fn c_kind(ty: &str) -> Kind {
    let ty = ty.replace("const ", "");
    let ty = ty.trim();
    if let Some(inner) = ty.strip_suffix('*') {
        let inner = inner.trim();
        if inner.contains("_function") {
            return Kind::Function;
        }
        return Kind::Ptr(Box::new(c_kind(inner)));
    }
    if ty.contains("_function") {
        // A callback passed by value (`MPI_T_event_cb_function`) is its address.
        return Kind::Function;
    }
    match ty {
        "int" | "MPI_T_cb_safety" | "MPI_T_source_order" => Kind::Int,
        "MPI_Count" | "MPI_Offset" => Kind::Count,
        "MPI_Aint" => Kind::Aint,
        "double" => Kind::Double,
        "void" => Kind::Void,
        "char" => Kind::Char,
        "MPI_Status" => Kind::Status,
        t if C_HANDLES.contains(&t) => Kind::Handle,
        t => panic!("a C type this test does not know: {t:?}"),
    }
}

/// The kind of a C parameter declaration (`const int counts[]`, ...).
fn c_param(decl: &str) -> Kind {
    let decl = decl.trim();
    // Arrays are pointers: `x[]`, `x[][3]` (an array of triplets is a pointer to ints).
    let (decl, array) = match decl.find('[') {
        Some(i) => (&decl[..i], true),
        None => (decl, false),
    };
    // The name is the last identifier; what is before it is the type.
    let name_at = decl.rfind(|c: char| !(c.is_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
    let kind = c_kind(&decl[..name_at]);
    if array {
        Kind::Ptr(Box::new(kind))
    } else {
        kind
    }
}

/// The kind of a Rust type in an extern signature.
fn rust_kind(ty: &str) -> Kind {
    let ty = ty.trim();
    for p in ["*const ", "*mut "] {
        if let Some(inner) = ty.strip_prefix(p) {
            return Kind::Ptr(Box::new(rust_kind(inner)));
        }
    }
    if ty.starts_with("Option<") {
        return Kind::Function;
    }
    match ty {
        "c_int" | "i32" => Kind::Int,
        "i64" => Kind::Count,
        "isize" => Kind::Aint,
        "f64" => Kind::Double,
        "Handle" => Kind::Handle,
        "c_void" | "std::ffi::c_void" => Kind::Void,
        "c_char" | "std::ffi::c_char" => Kind::Char,
        "MpiStatus" => Kind::Status,
        "[c_int; 3]" => Kind::Int,
        // A callback taken as its address: the predefined ones
        // (`MPI_COMM_NULL_COPY_FN`, ...) are sentinel values, not functions.
        "usize" => Kind::Function,
        t => panic!("a Rust type this test does not know: {t:?}"),
    }
}

/// Split a parameter list at its top-level commas.
fn params(list: &str) -> Vec<&str> {
    list.split(',').map(str::trim).filter(|p| !p.is_empty()).collect()
}

/// The Rust parameter list `a: T, b: U` as kinds.
fn rust_params(list: &str) -> Vec<Kind> {
    params(list)
        .iter()
        .map(|p| rust_kind(p.split_once(':').unwrap_or_else(|| panic!("a parameter without a type: {p}")).1))
        .collect()
}

/// Every `extern "C"` function of capi's sources, with its parameters and
/// return kind, including those its macros generate.
fn rust_exports() -> BTreeMap<String, (Vec<Kind>, Kind)> {
    // Every source file, in capi/src and its module directories.
    let mut files = Vec::new();
    let mut dirs = vec![std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("a directory of capi/src") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    let mut out = BTreeMap::new();
    for path in files {
        let text = std::fs::read_to_string(&path).expect("a source file");
        // Written out: `extern "C" fn MPI_X(a: T, ...) -> R`.
        let mut rest = text.as_str();
        while let Some(i) = rest.find("extern \"C\" fn MPI_") {
            rest = &rest[i + "extern \"C\" fn ".len()..];
            let open = rest.find('(').expect("a parameter list");
            let close = rest.find(')').expect("the list's end");
            let ret = rest[close + 1..].trim_start().strip_prefix("->").expect("a return type");
            let ret =
                ret.trim_start().split(|c: char| c.is_whitespace() || c == '{' || c == ';').next().expect("a type");
            out.insert(rest[..open].to_string(), (rust_params(&rest[open + 1..close]), rust_kind(ret)));
        }
        // `collective!(MPI_X / MPI_Ix / MPI_X_init = start(args) on comm ...)`:
        // the blocking form, the non-blocking one with a request, and the
        // persistent one with an info and a request.
        let mut rest = text.as_str();
        while let Some(i) = rest.find("\ncollective!(MPI_") {
            rest = &rest[i + "\ncollective!(".len()..];
            let (names, tail) = rest.split_once(" = ").expect("collective!'s names");
            let names: Vec<&str> = names.split(" / ").collect();
            assert_eq!(names.len(), 3, "collective! names three entry points: {names:?}");
            let open = tail.find('(').expect("a parameter list");
            let close = tail.find(')').expect("the list's end");
            let ps = rust_params(&tail[open + 1..close]);
            let mut with_request = ps.clone();
            with_request.push(Kind::Ptr(Box::new(Kind::Handle)));
            let mut persistent = ps.clone();
            persistent.extend([Kind::Handle, Kind::Ptr(Box::new(Kind::Handle))]);
            out.insert(names[0].to_string(), (ps, Kind::Int));
            out.insert(names[1].to_string(), (with_request, Kind::Int));
            out.insert(names[2].to_string(), (persistent, Kind::Int));
        }
        // `int_conversions! { MPI_X_toint / MPI_X_fromint: NULL; ... }`.
        if let Some(i) = text.find("\nint_conversions! {") {
            let block = &text[i..];
            let block = &block[..block.find("\n}").expect("the block's end")];
            for line in block.lines().skip(1) {
                let Some((to, from)) = line.split(':').next().and_then(|n| n.split_once(" / ")) else { continue };
                out.insert(to.trim().to_string(), (vec![Kind::Handle], Kind::Int));
                out.insert(from.trim().to_string(), (vec![Kind::Int], Kind::Handle));
            }
        }
        // `macro_rules! m { ($a:expr, $f:ident, ...) => { ... extern "C" fn $f(...) ... } }`
        // invoked as `m!(x, MPI_X, ...);`: each metavariable named by an
        // `extern "C" fn` gets the invocation's argument at its position.
        let mut rest = text.as_str();
        while let Some(i) = rest.find("macro_rules! ") {
            rest = &rest[i + "macro_rules! ".len()..];
            let name = &rest[..rest.find(' ').expect("a macro's name")];
            let pat_open = rest.find("($").map(|o| o + 1);
            let Some(pat_open) = pat_open else { continue };
            let pattern = &rest[pat_open..pat_open + rest[pat_open..].find(')').expect("a pattern's end")];
            let vars: Vec<&str> = pattern.split(',').map(|v| v.trim().split(':').next().unwrap_or("")).collect();
            let end = rest.find("\n}").unwrap_or(rest.len());
            let body = &rest[..end];
            let mut fns = Vec::new();
            let mut b = body;
            while let Some(j) = b.find("extern \"C\" fn $") {
                b = &b[j + "extern \"C\" fn ".len()..];
                let open = b.find('(').expect("a parameter list");
                let close = b.find(')').expect("the list's end");
                // Parameter types that are metavariables themselves (`field!`) are the special cases above.
                if !b[open + 1..close].contains('$') {
                    fns.push((b[..open].to_string(), rust_params(&b[open + 1..close])));
                }
            }
            if fns.is_empty() {
                continue;
            }
            let call = format!("\n{name}!(");
            let mut inv = text.as_str();
            while let Some(k) = inv.find(&call) {
                inv = &inv[k + call.len()..];
                let args: Vec<&str> =
                    inv[..inv.find(')').expect("an invocation's end")].split(',').map(str::trim).collect();
                for (var, ps) in &fns {
                    if let Some(at) = vars.iter().position(|v| v == var) {
                        out.insert(args[at].to_string(), (ps.clone(), Kind::Int));
                    }
                }
            }
        }
        // `field!(get, set, name)`: a status field's getter and setter.
        let mut rest = text.as_str();
        while let Some(i) = rest.find("\nfield!(MPI_") {
            rest = &rest[i + "\nfield!(".len()..];
            let args: Vec<&str> = rest[..rest.find(')').expect("field!'s end")].split(',').map(str::trim).collect();
            let status = || Kind::Ptr(Box::new(Kind::Status));
            out.insert(args[0].to_string(), (vec![status(), Kind::Ptr(Box::new(Kind::Int))], Kind::Int));
            out.insert(args[1].to_string(), (vec![status(), Kind::Int], Kind::Int));
        }
    }
    out
}

#[test]
fn every_export_matches_its_prototype_parameter_by_parameter() {
    let rust = rust_exports();
    let mut wrong = Vec::new();
    for proto in mpi_abi::abi::FUNCTIONS {
        let open = proto.find('(').expect("a prototype's parameters");
        let head = &proto[..open];
        let name_at = head.rfind(' ').expect("a return type") + 1;
        let (ret, name) = (c_kind(&head[..name_at]), &head[name_at..]);
        let list = &proto[open + 1..proto.rfind(')').expect("the list's end")];
        // `void` is no parameter; `...` (MPI_Pcontrol) has no Rust counterpart.
        let c: Vec<Kind> = params(list).into_iter().filter(|p| *p != "void" && *p != "...").map(c_param).collect();
        match rust.get(name) {
            None => wrong.push(format!("{name}: declared in mpi.h, not found in capi's sources")),
            Some((r, rret)) if (r, rret) != (&c, &ret) => {
                wrong.push(format!("{name}: C ({c:?}) -> {ret:?}, Rust ({r:?}) -> {rret:?}"))
            }
            Some(_) => {}
        }
    }
    assert!(wrong.is_empty(), "{} exports differ from mpi.h:\n{}", wrong.len(), wrong.join("\n"));
    // The parser saw them all (a broken pattern would find none and pass).
    assert!(rust.len() >= mpi_abi::abi::FUNCTIONS.len(), "only {} Rust exports found", rust.len());
}

#[test]
fn the_check_catches_an_int_where_the_prototype_has_a_count() {
    // MPI_Type_size_c's `MPI_Count *size`, read as an `int *` by mistake.
    let c = vec![Kind::Handle, c_param("MPI_Count *size")];
    assert_ne!(rust_params("datatype: Handle, size: *mut c_int"), c);
    assert_eq!(rust_params("datatype: Handle, size: *mut i64"), c);
    assert_eq!(c_param("int ranges[][3]"), rust_kind("*const [c_int; 3]"));
}
