//! Whether a program can run as contexts of one process, and what loading
//! it takes (DESIGN §3, issue 46).
//!
//! A rank that is a context is the program loaded once more into the host
//! process, from a copy of its file (the dynamic loader loads one file only
//! once, and each rank needs its own globals), as SimGrid SMPI privatizes
//! its ranks. That works for a position-independent executable that links
//! our MPI's shared library and keeps no state the loader cannot give it
//! once per copy:
//!
//! * **position-independent** (`ET_DYN` with an interpreter: what Debian's
//!   gcc builds by default); the copy has its `DF_1_PIE` flag cleared,
//!   since glibc refuses to `dlopen` a PIE executable as such;
//! * **no thread-local variables** (`PT_TLS`): an executable's code
//!   reaches them at fixed offsets from the thread pointer, valid only for
//!   the process's main executable: loaded as a library they would land on
//!   the host's own (Rust programs always have some: they run as processes);
//! * **linked with `libmpi_abi.so.1`**, the one library that knows how to
//!   keep one state per rank in a host (a program of another MPI runs as a
//!   process, under that MPI's own launcher protocol);
//! * **no threads or forks of its own** (`pthread_create`, `thrd_create`,
//!   OpenMP, `fork`): a thread would run beside the host's and call MPI as
//!   whichever rank the host is running; a fork would copy the whole host;
//! * **a `main`** found among its dynamic symbols or in its symbol table;
//! * **no copy of a library's changing data** (`R_X86_64_COPY`): an
//!   executable that reads a library's variable directly gets a private
//!   copy of it, filled when the executable is loaded, and the library's
//!   own code then uses that copy — but only for the main executable of a
//!   process: a rank's copy stays a snapshot while the library changes its
//!   own. A snapshot is right for what never changes once ranks load
//!   (C's `stdin`, `stdout`, `stderr`, which the host has set by then, the
//!   program's name, its `environ` at start); anything else (`std::cout`,
//!   `getopt`'s `optind` and `optarg`, ...) makes it run as processes.
//!   Built with `-fPIC`, a program reaches such data through the GOT and
//!   has no copy.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use object::elf;
use object::read::elf::{Dyn, ElfFile64, FileHeader, ProgramHeader};
use object::{Endianness, Object, ObjectSymbol, ObjectSymbolTable};

/// The library a program must link to run as contexts.
pub const MPI_LIBRARY: &str = "libmpi_abi.so.1";

/// The library variables a rank may hold a copy of, taken when it is
/// loaded (see the module's documentation).
const SNAPSHOTS: &[&str] = &[
    "stdin",
    "stdout",
    "stderr",
    "environ",
    "__environ",
    "_environ",
    "__progname",
    "__progname_full",
    "program_invocation_name",
    "program_invocation_short_name",
];

/// Functions whose use makes a program run as processes: it starts threads
/// or processes of its own.
const THREADS: &[&str] = &["pthread_create", "thrd_create", "clone", "clone3", "fork", "vfork", "__kmpc_fork_call"];

/// A program that can be loaded once per rank.
#[derive(Clone, Debug)]
pub struct Loadable {
    /// The program's file.
    pub path: PathBuf,
    /// `main`'s address relative to the load base.
    pub main_offset: u64,
    /// File offset of the `DT_FLAGS_1` value, whose `DF_1_PIE` bit a copy clears.
    flags_1_at: Option<usize>,
    /// The shared libraries it names (`DT_NEEDED`), each with the file the
    /// program itself would load for it, if its own search path has one.
    pub needed: Vec<(String, Option<PathBuf>)>,
    /// Memory mappings one loaded copy takes: a `PT_LOAD` segment each,
    /// plus the part `PT_GNU_RELRO` turns read-only after relocation.
    pub mappings: usize,
}

/// Why a program cannot run as contexts (it runs as processes).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{program}: {why}")]
pub struct NotLoadable {
    /// The program, as given.
    pub program: String,
    /// What stops it.
    pub why: String,
}

fn refuse(program: &Path, why: impl Into<String>) -> NotLoadable {
    NotLoadable { program: program.display().to_string(), why: why.into() }
}

/// Decide whether `program` can be loaded once per rank.
pub fn inspect(program: &Path) -> Result<Loadable, NotLoadable> {
    let data = std::fs::read(program).map_err(|e| refuse(program, format!("cannot read it: {e}")))?;
    if !data.starts_with(b"\x7fELF") {
        let what = if data.starts_with(b"#!") { "a script" } else { "not an ELF executable" };
        return Err(refuse(program, what));
    }
    let file = ElfFile64::<Endianness>::parse(&*data)
        .map_err(|e| refuse(program, format!("not a 64-bit ELF file this host can load ({e})")))?;
    let endian = file.endian();
    let header = file.elf_header();
    if header.e_machine(endian) != elf::EM_X86_64 || cfg!(not(target_arch = "x86_64")) {
        return Err(refuse(program, "built for another machine"));
    }
    let phdrs = file.elf_program_headers();
    let has = |t: u32| phdrs.iter().any(|p| p.p_type(endian) == t);
    if !has(elf::PT_DYNAMIC) {
        return Err(refuse(program, "statically linked"));
    }
    if header.e_type(endian) != elf::ET_DYN || !has(elf::PT_INTERP) {
        return Err(refuse(program, "not a position-independent executable (build it with -fPIE -pie)"));
    }
    if has(elf::PT_TLS) {
        return Err(refuse(
            program,
            "it has thread-local variables (a PT_TLS segment), which an executable reaches only as its process's main program",
        ));
    }
    // The dynamic section: DT_NEEDED names, search paths, DT_FLAGS_1.
    let dynamic = phdrs
        .iter()
        .find(|p| p.p_type(endian) == elf::PT_DYNAMIC)
        .ok_or_else(|| refuse(program, "no dynamic section"))?;
    let dyn_off = dynamic.p_offset(endian) as usize;
    let entries = dynamic
        .dynamic(endian, &*data)
        .ok()
        .flatten()
        .ok_or_else(|| refuse(program, "its dynamic section cannot be read"))?;
    let strtab = file
        .elf_section_table()
        .dynamic(endian, &*data)
        .ok()
        .flatten()
        .map(|(_, link)| file.elf_section_table().strings(endian, &*data, link))
        .and_then(Result::ok);
    let string = |v: u64| -> Option<String> {
        let t = strtab.as_ref()?;
        t.get(v as u32).ok().map(|b| String::from_utf8_lossy(b).into_owned())
    };
    let (mut needed, mut rpath, mut runpath, mut flags_1_at) = (Vec::new(), None, None, None);
    for (i, d) in entries.iter().enumerate() {
        let tag = d.d_tag(endian) as u32;
        let val = d.d_val(endian);
        match tag {
            elf::DT_NEEDED => needed.extend(string(val)),
            elf::DT_RPATH => rpath = string(val),
            elf::DT_RUNPATH => runpath = string(val),
            elf::DT_FLAGS_1 => flags_1_at = Some(dyn_off + i * std::mem::size_of::<elf::Dyn64<Endianness>>() + 8),
            _ => {}
        }
    }
    if !needed.iter().any(|n| n == MPI_LIBRARY) {
        return Err(refuse(program, format!("not linked with {MPI_LIBRARY} (this MPI's standard-ABI library)")));
    }
    // Imports that start threads or processes.
    let imports: Vec<String> = file
        .dynamic_symbols()
        .filter(|s| s.is_undefined())
        .filter_map(|s| s.name().ok().map(|n| n.split('@').next().unwrap_or(n).to_string()))
        .collect();
    if let Some(t) = imports.iter().find(|n| THREADS.contains(&n.as_str()) || n.starts_with("GOMP_parallel")) {
        return Err(refuse(program, format!("it starts threads or processes of its own (it calls {t})")));
    }
    // Copies of a library's data (copy relocations) that go stale.
    if let Some(relocs) = file.dynamic_relocations() {
        for (_, r) in relocs {
            let copy = matches!(r.flags(), object::RelocationFlags::Elf { r_type } if r_type == elf::R_X86_64_COPY);
            let object::RelocationTarget::Symbol(index) = r.target() else { continue };
            if !copy {
                continue;
            }
            // A dynamic relocation names an entry of the dynamic symbol table.
            let name = file
                .dynamic_symbol_table()
                .and_then(|t| t.symbol_by_index(index).ok())
                .and_then(|s| s.name().ok().map(str::to_string));
            let name = name.unwrap_or_default();
            let bare = name.split('@').next().unwrap_or(&name);
            if !SNAPSHOTS.contains(&bare) {
                return Err(refuse(
                    program,
                    format!(
                        "it keeps its own copy of a library's variable {bare} (a copy relocation), which would not follow \
                         the library's changes in a rank; build it with -fPIC to run it as contexts"
                    ),
                ));
            }
        }
    }
    let main = file
        .dynamic_symbols()
        .chain(file.symbols())
        .find(|s| s.name() == Ok("main") && !s.is_undefined() && s.address() != 0)
        .ok_or_else(|| refuse(program, "it has no `main` symbol (stripped?)"))?;
    let origin = program.parent().map(Path::to_path_buf).unwrap_or_default();
    let needed = needed
        .into_iter()
        .map(|n| (n.clone(), find_library(&n, rpath.as_deref(), runpath.as_deref(), &origin)))
        .collect();
    let mappings = phdrs.iter().filter(|p| matches!(p.p_type(endian), elf::PT_LOAD | elf::PT_GNU_RELRO)).count();
    Ok(Loadable { path: program.to_path_buf(), main_offset: main.address(), flags_1_at, needed, mappings })
}

/// The file the dynamic loader would take for `name` from the program's
/// own search path (ld.so(8): `DT_RPATH` when there is no `DT_RUNPATH`,
/// then `LD_LIBRARY_PATH`, then `DT_RUNPATH`; `$ORIGIN` is the program's
/// directory), or `None` to leave it to the system's (the cache and the
/// default directories, as `dlopen` of the bare name searches).
fn find_library(name: &str, rpath: Option<&str>, runpath: Option<&str>, origin: &Path) -> Option<PathBuf> {
    if name.contains('/') {
        return Some(PathBuf::from(name));
    }
    let expand = |dirs: &str| -> Vec<PathBuf> {
        dirs.split(':')
            .filter(|d| !d.is_empty())
            .map(|d| {
                let o = origin.to_string_lossy();
                PathBuf::from(d.replace("${ORIGIN}", &o).replace("$ORIGIN", &o))
            })
            .collect()
    };
    let mut dirs = Vec::new();
    if runpath.is_none() {
        dirs.extend(rpath.map(expand).unwrap_or_default());
    }
    if let Some(l) = std::env::var_os("LD_LIBRARY_PATH") {
        dirs.extend(expand(&l.to_string_lossy()));
    }
    dirs.extend(runpath.map(expand).unwrap_or_default());
    dirs.into_iter().map(|d| d.join(name)).find(|p| p.is_file())
}

impl Loadable {
    /// Write the copy rank `rank` loads into `dir`: the program's bytes
    /// with `DF_1_PIE` cleared. Each copy is a file of its own, so the
    /// loader maps it apart from the others and the rank gets its own
    /// globals.
    pub fn copy_for(&self, rank: u32, dir: &Path) -> std::io::Result<PathBuf> {
        let mut data = std::fs::read(&self.path)?;
        if let Some(at) = self.flags_1_at {
            if let Some(v) = data.get_mut(at..at + 8) {
                let flags = u64::from_le_bytes(v.try_into().unwrap_or_default()) & !u64::from(elf::DF_1_PIE);
                v.copy_from_slice(&flags.to_le_bytes());
            }
        }
        let name = self.path.file_name().unwrap_or(OsStr::new("program")).to_string_lossy();
        let out = dir.join(format!("{rank}.{name}"));
        crate::contexts::write_private(&out, &data)?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_not_an_elf_executable_is_refused_by_name() {
        let dir = std::env::temp_dir().join(format!("dn-inspect-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let script = dir.join("run.sh");
        std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
        let e = inspect(&script).unwrap_err();
        assert_eq!(e.why, "a script");
        assert!(e.to_string().starts_with(&script.display().to_string()));
        let e = inspect(&dir.join("missing")).unwrap_err();
        assert!(e.why.starts_with("cannot read it"), "{e}");
        // This test binary is a Rust program: thread-local variables, and
        // no libmpi_abi.
        let me = std::env::current_exe().unwrap();
        let e = inspect(&me).unwrap_err();
        assert!(e.why.contains("thread-local") || e.why.contains("libmpi_abi"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_library_found_on_the_programs_own_path_is_the_one_loaded() {
        let dir = std::env::temp_dir().join(format!("dn-findlib-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("lib")).unwrap();
        std::fs::write(dir.join("lib/libx.so.1"), b"").unwrap();
        let origin = dir.clone();
        assert_eq!(find_library("libx.so.1", None, Some("$ORIGIN/lib"), &origin), Some(dir.join("lib/libx.so.1")));
        assert_eq!(find_library("libx.so.1", Some("${ORIGIN}/lib"), None, &origin), Some(dir.join("lib/libx.so.1")));
        assert_eq!(find_library("libx.so.1", Some("${ORIGIN}/lib"), Some("/nowhere"), &origin), None, "RUNPATH wins");
        assert_eq!(find_library("liby.so", None, None, &origin), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
