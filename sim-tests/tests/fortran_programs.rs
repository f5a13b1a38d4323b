//! Fortran programs (issue 48): an F77-style program with `mpif.h`
//! (`sim-tests/fortran/f77.f`), a `use mpi` program
//! (`sim-tests/fortran/usempi.f90`) and a `use mpi_f08` program
//! (`sim-tests/fortran/f08.f90`), built with our `mpifort` and run on
//! the simulator in both rank modes (same output, same device trace), over
//! UDP and over DPDK, unchanged. Each checks itself and prints "No Errors"
//! on rank 0. Also: module `mpi` has explicit interfaces that catch a
//! wrong call, and the glue calls nothing but the C ABI.
//!
//! Needs gfortran (`scripts/setup.sh` installs it). Without it the tests
//! say they were skipped, unless `DN_REQUIRE_BUILD_TOOLS` is set (CI),
//! which makes that a failure.

use std::path::{Path, PathBuf};
use std::process::Command;

use sim_tests::{bin_dir, c_prefix, dnrun, repo};

/// Whether gfortran is here; if not, skip (or fail under `DN_REQUIRE_BUILD_TOOLS`).
fn gfortran_or_skip(test: &str) -> bool {
    if Command::new("gfortran").arg("--version").output().is_ok_and(|o| o.status.success()) {
        return true;
    }
    let why = "gfortran is not installed (scripts/setup.sh installs it)";
    assert!(
        !adi::knobs::flag("DN_REQUIRE_BUILD_TOOLS").unwrap_or(true),
        "{test}: DN_REQUIRE_BUILD_TOOLS is set but {why}"
    );
    eprintln!("SKIPPED {test}: {why}");
    false
}

/// Compile `sim-tests/fortran/<file>` with our `mpifort` into `f-<stem>`
/// beside the binaries (each test writes its own output name).
fn mpifort(file: &str, out: &str, flags: &[&str]) -> Result<PathBuf, String> {
    let exe = bin_dir().join(out);
    // Each output its own directory for the modules a program defines:
    // tests build at once, and gfortran writes NAME.mod where it runs.
    let dir = bin_dir().join(format!("{out}.mod.d"));
    std::fs::create_dir_all(&dir).expect("make a module directory");
    let o = Command::new(c_prefix().join("bin/mpifort"))
        .args(["-O2", "-Wall"])
        .args(flags)
        .arg("-o")
        .arg(&exe)
        .arg(repo().join("sim-tests/fortran").join(file))
        .current_dir(&dir)
        .output()
        .expect("run mpifort");
    if o.status.success() {
        Ok(exe)
    } else {
        Err(String::from_utf8_lossy(&o.stderr).into_owned())
    }
}

/// Each rank's lines in the order it wrote them (`-l` tags them), ranks apart.
fn by_rank(text: &[u8]) -> Vec<String> {
    let mut lines: Vec<String> =
        String::from_utf8_lossy(text).lines().filter(|l| !l.starts_with("dnrun:")).map(str::to_string).collect();
    lines.sort_by_key(|l| l.split_once(']').map(|(t, _)| t.to_string()).unwrap_or_default());
    lines
}

/// Run `prog` in `mode`: its status, its lines by rank, its device trace
/// without the metadata (which names the mode).
fn run_as(mode: &str, np: u32, nodes: u16, prog: &Path) -> (Option<i32>, Vec<String>, String) {
    let name = prog.file_name().unwrap().to_string_lossy().into_owned();
    let trace = bin_dir().join(format!("fortran-{name}-{np}-{mode}-{}.json", std::process::id()));
    let out =
        dnrun(np, nodes, &["-l", "--rank-mode", mode, "--trace", trace.to_str().unwrap()], prog.to_str().unwrap(), &[]);
    let text = std::fs::read_to_string(&trace).unwrap_or_default();
    let _ = std::fs::remove_file(&trace);
    let trace = text.lines().filter(|l| !l.starts_with("\"otherData\"")).collect::<Vec<_>>().join("\n");
    let mut lines = by_rank(&out.stdout);
    lines.extend(by_rank(&out.stderr));
    (out.status.code(), lines, trace)
}

/// The three programs at 2, 3 and 5 ranks (one node and several): every check
/// passes, and ranks as processes and as contexts give the same output
/// and the same device trace, byte for byte.
#[test]
fn fortran_programs_pass_their_checks_in_both_rank_modes() {
    if !gfortran_or_skip("fortran programs") {
        return;
    }
    for (file, out) in [("f77.f", "f-f77"), ("usempi.f90", "f-usempi"), ("f08.f90", "f-f08")] {
        let prog = mpifort(file, out, &[]).unwrap_or_else(|e| panic!("mpifort {file}:\n{e}"));
        // 33 ranks (odd, past 32) for the mpif.h program only: the others
        // take the same glue paths.
        let sizes: &[(u32, u16)] =
            if file == "f77.f" { &[(2, 2), (3, 1), (5, 3), (33, 9)] } else { &[(2, 2), (3, 1), (5, 3)] };
        for &(np, nodes) in sizes {
            let (ps, pl, pt) = run_as("processes", np, nodes, &prog);
            let (cs, cl, ct) = run_as("contexts", np, nodes, &prog);
            assert!(
                ps == Some(0) && pl.iter().any(|l| l == "[0]  No Errors"),
                "{file} at {np} ranks as processes:\n{}",
                pl.join("\n")
            );
            assert_eq!((ps, &pl), (cs, &cl), "{file} at {np} ranks: processes and contexts differ");
            assert!(!pt.is_empty() && pt == ct, "{file} at {np} ranks: the two modes' device traces differ");
        }
    }
}

/// The same binaries, unchanged, over UDP and over DPDK.
#[test]
fn fortran_programs_run_over_udp_and_dpdk() {
    if !gfortran_or_skip("fortran programs over UDP and DPDK") {
        return;
    }
    let mut backends = vec!["udp"];
    if sim_tests::dpdk_or_skip("a Fortran program's DPDK run") {
        backends.push("dpdk");
    }
    for (file, out) in [("f77.f", "f-f77-net"), ("usempi.f90", "f-usempi-net"), ("f08.f90", "f-f08-net")] {
        let prog = mpifort(file, out, &[]).unwrap_or_else(|e| panic!("mpifort {file}:\n{e}"));
        for backend in &backends {
            let o = dnrun(3, 1, &["--backend", backend, "--timeout", "60"], prog.to_str().unwrap(), &[]);
            let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
            assert!(o.status.success() && text.contains("No Errors"), "{file} over {backend}:\n{text}");
        }
    }
}

/// Process creation from Fortran (`sim-tests/fortran/spawn.f90`, issue
/// 50): `MPI_Comm_spawn` with an argv ended by a blank entry and
/// `MPI_Comm_spawn_multiple` with a table of arguments, from the last
/// rank, through module `mpi_f08`; the children check their arguments and
/// `MPI_APPNUM`. On the simulator at 1, 2 and 5 ranks, twice at 2 (the
/// same simulated end), and over UDP.
#[test]
fn fortran_programs_spawn_processes() {
    if !gfortran_or_skip("a Fortran program that spawns") {
        return;
    }
    let prog = mpifort("spawn.f90", "f-spawn", &[]).unwrap_or_else(|e| panic!("mpifort spawn.f90:\n{e}"));
    let mut ends = Vec::new();
    for (np, extra) in
        [(1, vec![]), (2, vec![]), (2, vec![]), (5, vec![]), (3, vec!["--backend", "udp", "--timeout", "60"])]
    {
        let universe = (np + 6).to_string();
        let args: Vec<&str> = ["--universe-size", universe.as_str()].into_iter().chain(extra.iter().copied()).collect();
        let o = dnrun(np, 1, &args, prog.to_str().unwrap(), &[]);
        let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        assert!(o.status.success() && text.contains("No Errors"), "spawn.f90 at {np} ranks {extra:?}:\n{text}");
        if np == 2 {
            ends.push(text.lines().find(|l| l.contains("No Errors at")).map(str::to_string));
        }
    }
    assert!(
        ends[0].is_some() && ends[0] == ends[1],
        "two runs at 2 ranks ended at different simulated times: {ends:?}"
    );
}

/// A Fortran program with a C part (`mixed.f90`, `mixed.c`): the C side
/// converts the handles and status it is given with `mpi_abi_fort.h`'s
/// `MPI_*_f2c` (which the MPI 5.0 ABI leaves to the Fortran binding) and
/// hands back a communicator with `MPI_Comm_c2f`; in both rank modes.
#[test]
fn c_and_fortran_halves_convert_handles_with_mpi_abi_fort_h() {
    if !gfortran_or_skip("a mixed C and Fortran program") {
        return;
    }
    let obj = bin_dir().join("f-mixed-c.o");
    let o = Command::new(c_prefix().join("bin/mpicc"))
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-c", "-o"])
        .arg(&obj)
        .arg(repo().join("sim-tests/fortran/mixed.c"))
        .output()
        .expect("run mpicc");
    assert!(o.status.success(), "mpicc mixed.c:\n{}", String::from_utf8_lossy(&o.stderr));
    let prog = mpifort("mixed.f90", "f-mixed", &[obj.to_str().unwrap()]).unwrap_or_else(|e| panic!("mpifort:\n{e}"));
    for mode in ["processes", "contexts"] {
        let (status, lines, _) = run_as(mode, 3, 2, &prog);
        assert!(status == Some(0) && lines.iter().any(|l| l == "[0]  No Errors"), "{mode}:\n{}", lines.join("\n"));
    }
}

/// Modules `mpi` and `mpi_f08` declare every routine: a call with an
/// argument missing, or of the wrong type or kind where the standard has
/// no choice buffer (an `INTEGER` for a `TYPE(MPI_Comm)`), does not
/// compile; with implicit interfaces it would run and corrupt memory.
#[test]
fn module_mpi_interfaces_catch_wrong_calls() {
    if !gfortran_or_skip("module mpi's interfaces") {
        return;
    }
    let dir = bin_dir().join("fortran-wrong-calls");
    std::fs::create_dir_all(&dir).expect("make a directory");
    let cases = [
        ("no_ierror", "mpi", "call MPI_Send(x, 1, MPI_INTEGER, 0, 0, MPI_COMM_WORLD)", "ierror"),
        ("real_count", "mpi", "call MPI_Send(x, 1.5, MPI_INTEGER, 0, 0, MPI_COMM_WORLD, ierr)", "count"),
        ("int_flag", "mpi", "call MPI_Initialized(ierr, ierr)", "flag"),
        ("short_disp", "mpi", "call MPI_Put(x, 1, MPI_INTEGER, 0, 1, 1, MPI_INTEGER, 0, ierr)", "target_disp"),
        ("int_comm", "mpi_f08", "call MPI_Barrier(0)", "MPI_Barrier"),
        (
            "mixed_counts",
            "mpi_f08",
            "call MPI_Recv(x, 4_MPI_COUNT_KIND, MPI_INTEGER, 0, 0, 0, MPI_STATUS_IGNORE)",
            "mpi_recv",
        ),
    ];
    for (name, module, call, says) in cases {
        let src = dir.join(format!("{name}.f90"));
        let text =
            format!("program p\n  use {module}\n  implicit none\n  integer :: x(4), ierr\n  {call}\nend program p\n");
        std::fs::write(&src, text).expect("write the program");
        let o = Command::new(c_prefix().join("bin/mpifort"))
            .arg("-c")
            .arg(&src)
            .arg("-o")
            .arg(dir.join(format!("{name}.o")))
            .current_dir(&dir)
            .output()
            .expect("run mpifort");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success() && err.contains(says),
            "{name}: `{call}` compiled, or said nothing of {says}:\n{err}"
        );
    }
}

/// The glue's undefined symbols are the C ABI's functions and the C
/// library's, nothing of another MPI: the same Fortran build links any
/// library of the MPI 5.0 ABI.
#[test]
fn the_fortran_glue_calls_only_the_c_abi() {
    if !gfortran_or_skip("the Fortran glue's symbols") {
        return;
    }
    let lib = c_prefix().join("lib/libmpi_abi_f.a");
    let o = Command::new("nm").args(["-u", "--format=just-symbols"]).arg(&lib).output().expect("run nm");
    assert!(o.status.success(), "nm {}: {o:?}", lib.display());
    let abi: Vec<String> = mpi_abi::abi::FUNCTIONS
        .iter()
        .filter_map(|f| f.split('(').next()?.rsplit(' ').next().map(|n| n.trim_start_matches('*').to_string()))
        .collect();
    // What else it needs must be the C library's.
    let libc_path = Command::new("cc").arg("-print-file-name=libc.so.6").output().expect("run cc");
    let libc_path = String::from_utf8_lossy(&libc_path.stdout).trim().to_string();
    let libc = Command::new("nm").args(["-D", "--defined-only", "--format=just-symbols"]).arg(&libc_path).output();
    let libc: Vec<String> = libc
        .map(|o| {
            String::from_utf8_lossy(&o.stdout).lines().map(|l| l.split('@').next().unwrap_or("").to_string()).collect()
        })
        .unwrap_or_default();
    assert!(libc.len() > 1000, "cannot read the C library's symbols from {libc_path}");
    let mut mpi_calls = 0;
    for sym in String::from_utf8_lossy(&o.stdout).lines().map(str::trim).filter(|s| !s.is_empty() && !s.ends_with(':'))
    {
        if abi.iter().any(|a| a == sym) {
            mpi_calls += 1;
            continue;
        }
        let ours = sym.starts_with("mpif_") || sym.starts_with("mpi_") || sym == "_GLOBAL_OFFSET_TABLE_";
        assert!(
            ours || libc.iter().any(|l| l == sym),
            "the Fortran glue needs {sym}, which is neither the MPI ABI's nor the C library's"
        );
    }
    assert!(mpi_calls > 300, "only {mpi_calls} calls into the ABI");
}
