//! Ranks as processes and ranks as contexts of `dnrun` (issue 46, DESIGN
//! §3): every C program gives the same output, exit status and device
//! trace both ways; a context has what a process gave for free (its own
//! globals, environment, errno, exit handlers, output and MPI state; an
//! exit, crash or abort that names it); and a program that cannot be a
//! context is refused by name, or run as processes by `auto`.

use std::path::Path;
use std::process::Output;

use sim_tests::{bin_dir, build_c, build_c_with, dnrun};

/// A job's outcome, reduced to what must not depend on how ranks run:
/// the exit status, each rank's stdout lines and stderr lines in the
/// order it wrote them (`-l` tags every line with its rank; ranks are
/// taken apart, since how two ranks' lines interleave depends on the
/// host), and the device trace without its metadata (which names the
/// mode). `dnrun`'s own messages are left out.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    status: Option<i32>,
    stdout: Vec<String>,
    stderr: Vec<String>,
    trace: String,
}

/// Lines a program prints of what it measured on the host (CPU time,
/// memory), which no two runs share: left out of the comparison.
const MEASURED: &[&str] = &["memory: peak grew by", "us CPU"];

fn by_rank(text: &[u8]) -> Vec<String> {
    let mut lines: Vec<String> = String::from_utf8_lossy(text)
        .lines()
        .filter(|l| !l.starts_with("dnrun:") && !MEASURED.iter().any(|m| l.contains(m)))
        .map(str::to_string)
        .collect();
    // A stable sort on the tag keeps each rank's own order.
    lines.sort_by_key(|l| l.split_once(']').map(|(t, _)| t.to_string()).unwrap_or_default());
    lines
}

fn run_as(mode: &str, np: u32, nodes: u16, prog: &Path, args: &[&str], extra: &[&str]) -> (Outcome, Output) {
    let trace = bin_dir().join(format!(
        "modes-{}-{np}-{mode}-{}.json",
        prog.file_name().unwrap().to_string_lossy(),
        std::process::id()
    ));
    let mut flags = vec!["-l", "--rank-mode", mode, "--trace", trace.to_str().unwrap()];
    flags.extend_from_slice(extra);
    let out = dnrun(np, nodes, &flags, prog.to_str().unwrap(), args);
    let text = std::fs::read_to_string(&trace).unwrap_or_default();
    let _ = std::fs::remove_file(&trace);
    let trace = text.lines().filter(|l| !l.starts_with("\"otherData\"")).collect::<Vec<_>>().join("\n");
    let o = Outcome { status: out.status.code(), stdout: by_rank(&out.stdout), stderr: by_rank(&out.stderr), trace };
    (o, out)
}

fn both_ways(name: &str, prog: &Path, np: u32, nodes: u16, args: &[&str], extra: &[&str]) -> Outcome {
    let (p, pout) = run_as("processes", np, nodes, prog, args, extra);
    let (c, cout) = run_as("contexts", np, nodes, prog, args, extra);
    let show = |o: &Output| format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    let what = format!("{name} on {np} ranks, {nodes} nodes {args:?}");
    assert!(!p.trace.is_empty(), "{what}: no trace as processes:\n{}", show(&pout));
    let first_difference = |a: &str, b: &str| {
        a.lines().zip(b.lines()).position(|(x, y)| x != y).map_or(a.lines().count().min(b.lines().count()), |i| i)
    };
    if p != c {
        let trace = match first_difference(&p.trace, &c.trace) {
            _ if p.trace == c.trace => "the same traces".to_string(),
            line => format!("traces first differ at line {line}"),
        };
        panic!(
            "{what}: processes and contexts differ (status {:?} and {:?}; stdout {}; stderr {}; {trace})\n--- processes\n{}\n--- contexts\n{}",
            p.status,
            c.status,
            if p.stdout == c.stdout { "the same" } else { "differs" },
            if p.stderr == c.stderr { "the same" } else { "differs" },
            show(&pout),
            show(&cout)
        );
    }
    c
}

/// Every C program of the suite that runs without threads, at rank counts
/// odd and even, one node and several (and `io.c` in a directory of its
/// own): the same output, status and trace.
/// (`compute` measures nothing else than CPU time: it is `MEASURED` whole.)
#[test]
fn every_c_program_runs_alike_as_processes_and_as_contexts() {
    let cases: &[(&str, u32, u16, &[&str])] = &[
        ("basic", 3, 2, &[]),
        ("basic", 8, 4, &[]),
        ("pingpong", 2, 2, &["200", "0"]),
        ("pingpong", 2, 1, &["50", "100000"]),
        ("scale", 9, 3, &[]),
        ("scale", 33, 17, &[]),
        ("groups", 5, 2, &[]),
        ("inter", 5, 2, &[]),
        ("ops", 5, 2, &[]),
        ("topo", 6, 3, &[]),
        ("types", 5, 2, &[]),
        ("arrays", 5, 2, &[]),
        ("rma", 5, 2, &[]),
        ("rma", 8, 4, &[]),
        ("session", 3, 3, &[]),
        ("partitioned", 3, 3, &[]),
        ("more", 5, 2, &[]),
        ("mpi41", 5, 2, &[]),
        ("complete", 5, 2, &[]),
        ("bigtype", 3, 2, &[]),
        ("leftover", 2, 1, &[]),
        ("fatal", 2, 1, &[]),
        ("fatal", 3, 1, &["abort", "7"]),
    ];
    for &(name, np, nodes, args) in cases {
        let prog = build_c(name);
        let o = both_ways(name, &prog, np, nodes, args, &[]);
        if !["fatal", "leftover"].contains(&name) {
            assert_eq!(o.status, Some(0), "{name} on {np} ranks failed: {o:?}");
        }
    }
    // MPI-IO in a directory of its own: collective accesses through
    // aggregators and the storage queue the ranks of a node share.
    let dir = std::env::temp_dir().join(format!("dn-modes-io-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let o = both_ways("io", &build_c("io"), 4, 2, &[dir.to_str().unwrap()], &[]);
    assert_eq!(o.status, Some(0), "io on 4 ranks failed: {o:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Globals, environment (`-x`, `DN_RANK`, a rank's own `setenv`), errno,
/// exit handlers, output written in pieces around calls that let other
/// ranks run, and MPI state a library loaded once must keep per rank
/// (error handlers, keyvals, info objects, names, added error classes,
/// buffered-send buffers): sim-tests/c/process.c checks each, as
/// processes and as contexts, on 1, 5 and 8 ranks.
#[test]
fn each_rank_has_what_a_process_has() {
    let prog = build_c("process");
    for (np, nodes) in [(1u32, 1u16), (5, 2), (8, 8)] {
        let o = both_ways("process", &prog, np, nodes, &["state"], &["-x", "PROCESS_TEST=yes"]);
        assert_eq!(o.status, Some(0), "{o:?}");
        assert!(o.stdout.iter().any(|l| l == &format!("[0] OK c-process on {np} ranks")), "{o:?}");
        for r in 0..np {
            let bye = format!("[{r}] exit handler of rank {r}, counter {r}");
            assert_eq!(o.stdout.iter().filter(|l| **l == bye).count(), 1, "rank {r}'s exit handler: {o:?}");
            assert!(o.stdout.contains(&format!("[{r}] rank {r} says: hello")), "rank {r}'s line was cut: {o:?}");
            assert!(o.stderr.contains(&format!("[{r}] rank {r} on stderr")), "{o:?}");
        }
    }
}

/// An exit, a crash or an abort in one rank ends that rank, names it and
/// the cause, and ends the job with the same status as when ranks are
/// processes, never a hang; the others' output stops there too.
#[test]
fn an_exit_a_crash_or_an_abort_in_one_rank_ends_the_job_naming_it() {
    let prog = build_c("process");
    let cases: &[(&[&str], i32, &str)] = &[
        (&["exit", "3"], 3, "rank 1 exited with code 3"),
        (&["exit0"], 1, "rank 1 exited (code 0) without calling MPI finalize"),
        (&["segv"], 139, "rank 1 was killed by signal 11 (SIGSEGV)"),
        (&["fpe"], 136, "rank 1 was killed by signal 8 (SIGFPE)"),
        (&["overflow"], 139, "rank 1 overflowed its stack"),
        (&["abort", "7"], 7, "rank 1 exited with code 7"),
        (&["cabort"], 134, "rank 1 was killed by signal 6 (SIGABRT)"),
        (&["lateexit", "5"], 5, "rank 1 exited with code 5"),
    ];
    for &(args, code, says) in cases {
        for mode in ["contexts", "processes"] {
            let out = dnrun(3, 2, &["-l", "--rank-mode", mode, "--timeout", "60"], prog.to_str().unwrap(), args);
            let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            let says =
                if mode == "processes" && args[0] == "overflow" { "rank 1 was killed by signal 11" } else { says };
            assert_eq!(out.status.code(), Some(code), "{args:?} as {mode}:\n{text}");
            assert!(text.contains(says), "{args:?} as {mode} does not say {says:?}:\n{text}");
            assert!(!text.contains("not reached"), "{args:?} as {mode}: a rank went past the failure:\n{text}");
            if args[0].ends_with("exit") || args[0] == "exit0" {
                assert!(text.contains("[1] exit handler of rank 1"), "{args:?} as {mode}: no exit handler:\n{text}");
            }
        }
    }
}

fn refused(prog: &Path, args: &[&str], why: &str) {
    let out = dnrun(2, 1, &["--rank-mode", "contexts"], prog.to_str().unwrap(), args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{} ran as contexts:\n{err}", prog.display());
    assert!(err.contains("--rank-mode contexts") && err.contains(why), "{}: {err}", prog.display());
    let out = dnrun(2, 1, &["-v"], prog.to_str().unwrap(), args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("ranks run as processes") && err.contains(why), "{}: auto said {err}", prog.display());
}

/// What cannot be a context is refused by name with `--rank-mode
/// contexts`, and `auto` runs it as processes, saying why under `-v`: a
/// program that starts threads, one built without `-fPIE`, one stripped of
/// its symbols (`main` is not exported), a program of no MPI of ours, and
/// any job on another backend.
#[test]
fn what_cannot_be_a_context_is_refused_by_name_or_run_as_processes() {
    let threads = build_c("threads");
    refused(&threads, &["serial"], "it calls pthread_create");
    let out = dnrun(2, 1, &[], threads.to_str().unwrap(), &["serial"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let no_pie = build_c_with("basic", "c-basic-no-pie", &["-fno-pie", "-no-pie"]);
    refused(&no_pie, &[], "not a position-independent executable");

    let stripped = build_c_with("basic", "c-basic-stripped", &["-s"]);
    refused(&stripped, &[], "no `main` symbol");

    let sh = bin_dir().join("modes-script.sh");
    std::fs::write(&sh, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&sh, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    refused(&sh, &[], "a script");

    let basic = build_c("basic");
    let out = dnrun(2, 1, &["--backend", "udp", "--rank-mode", "contexts"], basic.to_str().unwrap(), &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.code() == Some(2) && err.contains("--backend udp"), "{err}");
}

/// `auto` is the default and takes contexts when it can; `DN_RANK_MODE`
/// gives the default; a bad value is refused; `-v` names the mode.
#[test]
fn the_rank_mode_is_auto_by_default_and_dn_rank_mode_sets_it() {
    let basic = build_c("basic");
    let run = |env: Option<&str>| {
        let mut c = sim_tests::dnrun_command(2, 1, &["-v"], basic.to_str().unwrap(), &[]);
        if let Some(v) = env {
            c.env("DN_RANK_MODE", v);
        }
        let out = c.output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (code, err) = run(None);
    assert!(code == Some(0) && err.contains("2 ranks run as contexts"), "{err}");
    let (code, err) = run(Some("processes"));
    assert!(code == Some(0) && !err.contains("run as contexts"), "{err}");
    let (code, err) = run(Some("threads"));
    assert!(code == Some(2) && err.contains("DN_RANK_MODE"), "{err}");
}

/// A C++ program built with our `mpicxx` (g++ underneath).
fn build_cxx(out: &str, flags: &[&str]) -> std::path::PathBuf {
    let out = bin_dir().join(out);
    let o = std::process::Command::new(sim_tests::c_prefix().join("bin/mpicxx"))
        .env("MPICH_CXX", "g++")
        .args(["-std=c++17", "-Wall", "-Wextra", "-Werror", "-O2"])
        .args(flags)
        .arg("-o")
        .arg(&out)
        .arg(sim_tests::repo().join("sim-tests/cxx/streams.cpp"))
        .output()
        .expect("run mpicxx (is a C++ compiler installed?)");
    assert!(o.status.success(), "mpicxx streams.cpp failed:\n{}", String::from_utf8_lossy(&o.stderr));
    out
}

/// C++: iostreams and a static object's destructor, per rank. Built with
/// `-fPIC` the program runs as contexts, alike both ways; built as `g++`
/// builds by default it holds copies of `std::cout` and `std::cerr` (copy
/// relocations, snapshots of the library's objects taken at load), and
/// runs as processes, saying why (as contexts the first rank's copy was
/// an uninitialized stream and crashed).
#[test]
fn a_cxx_program_runs_as_contexts_when_built_with_fpic_and_as_processes_otherwise() {
    let pic = build_cxx("cxx-streams-pic", &["-fPIC"]);
    for np in [1u32, 3] {
        let o = both_ways("streams (-fPIC)", &pic, np, 2, &[], &[]);
        assert!(o.status == Some(0) && o.stdout.contains(&format!("[0] OK cxx-streams on {np} ranks")), "{o:?}");
        for r in 0..np {
            assert!(o.stdout.contains(&format!("[{r}] farewell from rank {r}")), "rank {r}'s destructor: {o:?}");
            assert!(o.stderr.contains(&format!("[{r}] rank {r} on std::cerr")), "{o:?}");
        }
    }
    let plain = build_cxx("cxx-streams", &[]);
    refused(&plain, &[], "_ZSt4cout");
    let out = dnrun(3, 2, &["-l"], plain.to_str().unwrap(), &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("[0] OK cxx-streams on 3 ranks"), "{text}");
}

/// The Rust MPI programs have thread-local variables (every Rust program
/// does), so they run as processes, and say why.
#[test]
fn rust_programs_run_as_processes_saying_why() {
    let out = dnrun(2, 2, &["-v"], "mpi-suite", &["pingpong"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("ranks run as processes") && err.contains("thread-local"), "{err}");
}
