//! No new process-wide state in the code a rank runs (issue 46).
//!
//! `libmpi_abi.so` is loaded once for every rank that `dnrun` hosts as a
//! context (`--rank-mode contexts`), so a `static` or a thread-local in it,
//! or in a crate it is built from, is shared by all of them: one rank's
//! error handler, keyval or info object would leak into another. What a
//! rank owns lives in `capi::process::Process` (and `PerThread`), which
//! the host switches with the rank. This test reads the sources of every
//! crate in the library and fails on any mutable `static` or
//! `thread_local!` not listed below with the reason it is not a rank's.

use std::path::Path;

/// `(file, name, why it may stay)`.
const ALLOWED: &[(&str, &str, &str)] = &[
    ("capi/src/process.rs", "CURRENT", "the pointer to the current rank's Process: switched by the host"),
    ("capi/src/process.rs", "REGISTERED", "whether CURRENT/THREAD were handed to the host: once per process"),
    ("capi/src/process.rs", "THREAD", "the pointer to the current rank's PerThread: switched by the host"),
    ("capi/src/datatype/mod.rs", "CONTIGUOUS_SIZES", "an immutable table"),
    ("capi/src/group.rs", "EMPTY", "an immutable value"),
    ("simlink/src/contexts.rs", "HOST", "whether the process hosts ranks: a fact of the process"),
    ("simlink/src/actor.rs", "THREAD_PINNED", "CPU pinning, which a host never does (one thread)"),
    ("adi/src/pmi.rs", "TAKEN", "the PMI connection: only under a PMI launcher, never in a host"),
    ("adi/src/pmi.rs", "KEPT", "the PMI connection: only under a PMI launcher, never in a host"),
    ("adi/src/pmi.rs", "FINALIZING", "the PMI connection: only under a PMI launcher, never in a host"),
    (
        "mpi/src/io/mod.rs",
        "NEXT",
        "makes shared-pointer file names unique within the process: shared by every rank on purpose",
    ),
    (
        "mpi/src/spawn.rs",
        "NEXT_REQUEST",
        "numbers spawn requests, whose file names also hold the rank: unique if shared, and a host spawns nothing",
    ),
    ("mpi/src/universe.rs", "START", "the origin of wall-clock MPI_Wtime: a host runs simulated ranks only"),
];

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != "tests" && n != "bin") {
                rust_files(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The names of the statics and thread-locals a source file declares,
/// outside its test module.
fn globals(src: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in src.lines() {
        if line.starts_with("#[cfg(test)]") {
            break;
        }
        let t = line.trim_start();
        if t.starts_with("//") {
            continue;
        }
        let decl = t
            .strip_prefix("pub(crate) ")
            .or_else(|| t.strip_prefix("pub "))
            .unwrap_or(t)
            .strip_prefix("static ")
            .map(|rest| rest.strip_prefix("mut ").unwrap_or(rest));
        if let Some(rest) = decl {
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            // `&'static` in a type is not a declaration.
            if !name.is_empty() && rest[name.len()..].trim_start().starts_with(':') {
                out.push(name);
            }
        }
    }
    out
}

#[test]
fn the_library_keeps_no_process_wide_state_but_what_is_listed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut found = Vec::new();
    for krate in ["capi", "mpi", "adi", "driver", "simlink", "fpga-regs"] {
        let mut files = Vec::new();
        rust_files(&root.join(krate).join("src"), &mut files);
        for f in files {
            let rel = f.strip_prefix(root).unwrap().display().to_string();
            for name in globals(&std::fs::read_to_string(&f).unwrap()) {
                found.push((rel.clone(), name));
            }
        }
    }
    let unlisted: Vec<String> = found
        .iter()
        .filter(|(f, n)| !ALLOWED.iter().any(|(af, an, _)| af == f && an == n))
        .map(|(f, n)| format!("{f}: {n}"))
        .collect();
    assert!(
        unlisted.is_empty(),
        "process-wide state a rank would share with every other rank of a host: {unlisted:?}; keep it in capi's Process \
         (or PerThread), or list it here with the reason it is not a rank's"
    );
    let stale: Vec<&str> = ALLOWED
        .iter()
        .filter(|(af, an, _)| !found.iter().any(|(f, n)| f == af && n == an))
        .map(|(_, n, _)| *n)
        .collect();
    assert!(stale.is_empty(), "listed but no longer declared (remove them from the list): {stale:?}");
}

#[test]
fn the_scan_finds_statics_and_thread_locals_and_ignores_types_and_tests() {
    let src = "static A: u8 = 0;\npub(crate) static mut B: u8 = 0;\nfn f(x: &'static str) {}\nthread_local! {\n    static C: u8 = 0;\n}\n// static D: u8\n#[cfg(test)]\nstatic E: u8 = 0;\n";
    assert_eq!(globals(src), ["A", "B", "C"]);
}
