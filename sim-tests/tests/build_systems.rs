//! The build systems a user brings find our MPI and nothing else: CMake's
//! `find_package(MPI COMPONENTS C CXX)`, Meson's `dependency('mpi')` for C
//! and C++, and `pkg-config`, with our install first on `PATH` and — in CI
//! and wherever `scripts/setup.sh` ran — Debian's MPICH installed too, whose
//! `mpicxx` CMake used to take for C++ before we had one.
//!
//! Needs cmake, meson, ninja and pkg-config (`scripts/setup.sh` installs
//! them). Without them the tests say they were skipped, unless
//! `DN_REQUIRE_BUILD_TOOLS` is set (CI), which makes that a failure.

use std::path::{Path, PathBuf};
use std::process::Command;

use sim_tests::{bin_dir, c_prefix, repo};

/// Whether every tool in `tools` is on `PATH`; if not, skip (or fail under
/// `DN_REQUIRE_BUILD_TOOLS`).
fn tools_or_skip(test: &str, tools: &[&str]) -> bool {
    let missing: Vec<&str> = tools
        .iter()
        .copied()
        .filter(|t| !Command::new(t).arg("--version").output().is_ok_and(|o| o.status.success()))
        .collect();
    if missing.is_empty() {
        return true;
    }
    let why = format!("{} not installed (scripts/setup.sh installs them)", missing.join(", "));
    assert!(
        !adi::knobs::flag("DN_REQUIRE_BUILD_TOOLS").unwrap_or(true),
        "{test}: DN_REQUIRE_BUILD_TOOLS is set but {why}"
    );
    eprintln!("SKIPPED {test}: {why}");
    false
}

/// `PATH` with our prefix's `bin` first, as the README tells users.
fn user_path() -> String {
    format!("{}:{}", c_prefix().join("bin").display(), std::env::var("PATH").unwrap_or_default())
}

fn run(cmd: &mut Command) -> String {
    let o = cmd.env("PATH", user_path()).output().unwrap_or_else(|e| panic!("run {cmd:?}: {e}"));
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "{cmd:?} failed:\n{text}");
    text
}

/// A fresh build directory beside the binaries.
fn fresh(name: &str) -> PathBuf {
    let d = bin_dir().join(name);
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// The binary links our `libmpi_abi.so.1` from the prefix and no other MPI
/// library (MPICH's `libmpich`, `libmpichcxx`, Open MPI's `libmpi.so.40`).
fn links_ours_only(exe: &Path) {
    let text = run(Command::new("ldd").arg(exe));
    let ours = format!("libmpi_abi.so.1 => {}", c_prefix().join("lib/libmpi_abi.so.1").display());
    assert!(text.contains(&ours), "{} does not link our library:\n{text}", exe.display());
    for line in text.lines() {
        let lib = line.split_whitespace().next().unwrap_or("");
        let other_mpi = lib.starts_with("libmpi") && lib != "libmpi_abi.so.1";
        assert!(!other_mpi, "{} links another MPI ({lib}):\n{text}", exe.display());
    }
}

/// Run both programs on the simulator with our `mpiexec` at 1 and 3 ranks.
fn runs_on_the_simulator(dir: &Path) {
    for np in ["1", "3"] {
        for (exe, lang) in [("hello_c", "C"), ("hello_cxx", "C++")] {
            let text = run(Command::new(c_prefix().join("bin/mpiexec")).args(["-n", np, "-q"]).arg(dir.join(exe)));
            assert!(text.contains(&format!("OK buildsys {lang} on {np} ranks")), "{exe} at {np} ranks:\n{text}");
        }
    }
}

/// CMake's FindMPI: every language finds our wrapper, our library and our
/// `mpiexec`, and the two programs build, link only us, and run.
#[test]
fn cmake_find_package_mpi_finds_ours_for_c_and_cxx() {
    if !tools_or_skip("cmake", &["cmake", "c++"]) {
        return;
    }
    let prefix = c_prefix();
    let build = fresh("buildsys-cmake");
    let text = run(Command::new("cmake").arg("-S").arg(repo().join("sim-tests/buildsys")).arg("-B").arg(&build));
    for lang in ["C", "CXX"] {
        let wrapper = if lang == "C" { "mpicc" } else { "mpicxx" };
        let want = format!(
            "dn: {lang} compiler={} libraries={} include={} version=5.0",
            prefix.join("bin").join(wrapper).display(),
            prefix.join("lib/libmpi_abi.so").display(),
            prefix.join("include").display()
        );
        assert!(text.contains(&want), "CMake did not find our MPI for {lang} (want \"{want}\"):\n{text}");
    }
    let mpiexec = format!("dn: mpiexec={}", prefix.join("bin/mpiexec").display());
    assert!(text.contains(&mpiexec), "CMake took another mpiexec:\n{text}");
    run(Command::new("cmake").arg("--build").arg(&build));
    for exe in ["hello_c", "hello_cxx"] {
        links_ours_only(&build.join(exe));
    }
    runs_on_the_simulator(&build);
}

/// Meson's `dependency('mpi', language: ...)` finds our wrappers through
/// their Open MPI-style queries (Meson looks for no MPICH-style one), with
/// our version.
#[test]
fn meson_dependency_mpi_finds_ours_for_c_and_cpp() {
    if !tools_or_skip("meson", &["meson", "ninja", "c++"]) {
        return;
    }
    let prefix = c_prefix();
    let build = fresh("buildsys-meson");
    let text = run(Command::new("meson").arg("setup").arg(&build).arg(repo().join("sim-tests/buildsys")));
    for wrapper in ["mpicc", "mpic++"] {
        let want = format!("{wrapper} found: YES ({})", prefix.join("bin").join(wrapper).display());
        assert!(text.contains(&want), "Meson did not find our {wrapper}:\n{text}");
    }
    let version = env!("CARGO_PKG_VERSION");
    assert!(text.contains(&format!("dn: c version={version} cpp version={version}")), "{text}");
    run(Command::new("ninja").arg("-C").arg(&build));
    for exe in ["hello_c", "hello_cxx"] {
        links_ours_only(&build.join(exe));
    }
    runs_on_the_simulator(&build);
}

/// Run the Fortran project's two programs (`use mpi_f08` and `mpif.h`)
/// with our `mpiexec` at 1 and 3 ranks.
fn fortran_runs_on_the_simulator(dir: &Path) {
    for np in ["1", "3"] {
        for (exe, what) in [("hello_f08", "Fortran"), ("hello_f77", "F77")] {
            let text = run(Command::new(c_prefix().join("bin/mpiexec")).args(["-n", np, "-q"]).arg(dir.join(exe)));
            assert!(text.contains(&format!("OK buildsys {what} on {np} ranks")), "{exe} at {np} ranks:\n{text}");
        }
    }
}

/// CMake's FindMPI for Fortran: our `mpifort`'s family (FindMPI tries
/// `mpif90` first), with `mpif.h`, module `mpi` and module `mpi_f08` all
/// found; the programs link only us and run.
#[test]
fn cmake_find_package_mpi_finds_ours_for_fortran() {
    if !tools_or_skip("cmake (Fortran)", &["cmake", "gfortran"]) {
        return;
    }
    let prefix = c_prefix();
    let build = fresh("buildsys-cmake-fortran");
    let text =
        run(Command::new("cmake").arg("-S").arg(repo().join("sim-tests/buildsys/fortran")).arg("-B").arg(&build));
    let compiler = text.lines().find_map(|l| l.split("dn: Fortran compiler=").nth(1)).unwrap_or_default();
    let ours = ["mpifort", "mpif90", "mpif77"]
        .iter()
        .any(|w| compiler.starts_with(&format!("{} ", prefix.join("bin").join(w).display())));
    assert!(ours, "CMake took another Fortran wrapper:\n{text}");
    assert!(
        compiler.ends_with("version=5.0 f77=TRUE f90=TRUE f08=TRUE"),
        "CMake's FindMPI did not find all three interfaces:\n{text}"
    );
    let mpiexec = format!("dn: mpiexec={}", prefix.join("bin/mpiexec").display());
    assert!(text.contains(&mpiexec), "CMake took another mpiexec:\n{text}");
    run(Command::new("cmake").arg("--build").arg(&build));
    for exe in ["hello_f08", "hello_f77"] {
        links_ours_only(&build.join(exe));
    }
    fortran_runs_on_the_simulator(&build);
}

/// Meson's `dependency('mpi', language: 'fortran')` finds our `mpifort`.
#[test]
fn meson_dependency_mpi_finds_ours_for_fortran() {
    if !tools_or_skip("meson (Fortran)", &["meson", "ninja", "gfortran"]) {
        return;
    }
    let prefix = c_prefix();
    let build = fresh("buildsys-meson-fortran");
    let text = run(Command::new("meson").arg("setup").arg(&build).arg(repo().join("sim-tests/buildsys/fortran")));
    let want = format!("mpifort found: YES ({})", prefix.join("bin/mpifort").display());
    assert!(text.contains(&want), "Meson did not find our mpifort:\n{text}");
    assert!(text.contains(&format!("dn: fortran version={}", env!("CARGO_PKG_VERSION"))), "{text}");
    run(Command::new("ninja").arg("-C").arg(&build));
    for exe in ["hello_f08", "hello_f77"] {
        links_ours_only(&build.join(exe));
    }
    fortran_runs_on_the_simulator(&build);
}

/// `pkg-config --cflags --libs` for mpi, mpi-c and mpi-cxx gives our flags,
/// and a C++ program built with them by plain `c++` links only us and runs.
#[test]
fn pkg_config_gives_our_flags() {
    if !tools_or_skip("pkg-config", &["pkg-config", "c++"]) {
        return;
    }
    let prefix = c_prefix();
    let pc_path = prefix.join("lib/pkgconfig");
    let mut flags = String::new();
    for pc in ["mpi", "mpi-c", "mpi-cxx"] {
        let text = run(Command::new("pkg-config").env("PKG_CONFIG_PATH", &pc_path).args(["--cflags", "--libs", pc]));
        let inc = format!("-I{}", prefix.join("include").display());
        assert!(text.contains(&inc) && text.contains("-lmpi_abi"), "pkg-config {pc}: {text}");
        let v = run(Command::new("pkg-config").env("PKG_CONFIG_PATH", &pc_path).args(["--modversion", pc]));
        assert_eq!(v.trim(), env!("CARGO_PKG_VERSION"), "pkg-config --modversion {pc}");
        flags = text;
    }
    // mpi-fort exactly when the Fortran bindings were built.
    if Command::new("gfortran").arg("--version").output().is_ok_and(|o| o.status.success()) {
        let text = run(Command::new("pkg-config").env("PKG_CONFIG_PATH", &pc_path).args(["--libs", "mpi-fort"]));
        assert!(text.contains("-lmpi_abi_f") && text.contains("-lmpi_abi"), "pkg-config mpi-fort: {text}");
    }
    let dir = fresh("buildsys-pkgconfig");
    std::fs::create_dir_all(&dir).expect("make the build directory");
    let exe = dir.join("hello_cxx");
    run(Command::new("c++")
        .arg("-o")
        .arg(&exe)
        .arg(repo().join("sim-tests/buildsys/hello.cpp"))
        .args(flags.split_whitespace()));
    links_ours_only(&exe);
    let text = run(Command::new(prefix.join("bin/mpiexec")).args(["-n", "2", "-q"]).arg(&exe));
    assert!(text.contains("OK buildsys C++ on 2 ranks"), "{text}");
}

/// The wrappers answer the queries MPICH's and Open MPI's answer, name us,
/// and refuse what they do not know instead of passing it to the compiler.
#[test]
fn wrappers_answer_build_system_queries() {
    let prefix = c_prefix();
    let inc = format!("-I{}", prefix.join("include").display());
    for (wrapper, compiler) in [("mpicc", "cc"), ("mpicxx", "c++"), ("mpic++", "c++")] {
        let w = prefix.join("bin").join(wrapper);
        let q = |arg: &str| {
            let o = Command::new(&w)
                .arg(arg)
                .env_remove("MPICH_CC")
                .env_remove("MPICH_CXX")
                .env_remove("MPICC_CC")
                .env_remove("MPICXX_CXX")
                .output()
                .expect("run the wrapper");
            (
                o.status.code(),
                String::from_utf8_lossy(&o.stdout).into_owned(),
                String::from_utf8_lossy(&o.stderr).into_owned(),
            )
        };
        let (code, show, _) = q("-show");
        assert!(
            code == Some(0) && show.starts_with(&format!("{compiler} {inc} ")) && show.contains("-lmpi_abi"),
            "{wrapper} -show: {show}"
        );
        let (_, compile, _) = q("-compile-info");
        assert_eq!(compile.trim(), format!("{compiler} {inc}"), "{wrapper} -compile-info");
        let (_, link, _) = q("-link-info");
        assert!(
            link.starts_with(compiler) && link.contains("-lmpi_abi") && !link.contains(&inc),
            "{wrapper} -link-info: {link}"
        );
        let (_, compile, _) = q("--showme:compile");
        assert_eq!(compile.trim(), inc, "{wrapper} --showme:compile");
        let (_, libs, _) = q("--showme:libs");
        assert_eq!(libs.trim(), "mpi_abi");
        let (code, version, _) = q("--showme:version");
        let lang = if wrapper == "mpicc" { "C" } else { "C++" };
        assert!(
            code == Some(0)
                && version.contains(&format!("DIMMnet-2 MPI {}", env!("CARGO_PKG_VERSION")))
                && version.contains(&format!("language: {lang};")),
            "{wrapper} --showme:version: {version}"
        );
        let (code, out, _) = q("--version");
        assert!(
            code == Some(0) && out.lines().next() == version.lines().next() && out.lines().count() > 1,
            "{wrapper} --version: {out}"
        );
        let (code, _, err) = q("--showme:nonsense");
        assert!(code == Some(2) && err.contains("unknown query"), "{wrapper} --showme:nonsense: {err}");
        let (code, help, _) = q("-help");
        assert!(code == Some(0) && help.contains("--showme:compile"), "{wrapper} -help: {help}");
    }
    // mpifort: the Fortran glue before the library, and gfortran's
    // permission for mpif.h's mismatched calls.
    if Command::new("gfortran").arg("--version").output().is_ok_and(|o| o.status.success()) {
        for w in ["mpifort", "mpif90", "mpif77"] {
            let o = Command::new(prefix.join("bin").join(w))
                .arg("-show")
                .env_remove("MPICH_FC")
                .env_remove("MPIFORT_FC")
                .env_remove("FC")
                .output()
                .expect("run mpifort");
            let show = String::from_utf8_lossy(&o.stdout);
            assert!(
                show.starts_with(&format!("gfortran {inc} -fallow-argument-mismatch "))
                    && show.contains("-lmpi_abi_f ")
                    && show.trim_end().ends_with("-lmpi_abi"),
                "{w} -show: {show}"
            );
        }
        let o = Command::new(prefix.join("bin/mpifort")).arg("--showme:version").output().expect("run mpifort");
        assert!(String::from_utf8_lossy(&o.stdout).contains("language: Fortran;"), "{o:?}");
    }
    // The compiler a build system names through MPICH's variables is used.
    let o = Command::new(prefix.join("bin/mpicxx"))
        .arg("-show")
        .env("MPICH_CXX", "clang++-x")
        .output()
        .expect("run mpicxx");
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("clang++-x "), "{o:?}");
    // No arguments: a usage line, not the compiler's "no input files".
    let o = Command::new(prefix.join("bin/mpicc")).output().expect("run mpicc");
    assert!(o.status.code() == Some(2) && String::from_utf8_lossy(&o.stderr).contains("usage: mpicc"), "{o:?}");
}
