//! Write the Fortran bindings' generated sources into a directory:
//! `cargo run -p mpi-fortran --bin gen-fortran -- DIR` writes
//! `DIR/mpif.h`, `DIR/mpi.f90` and `DIR/mpif_glue.c`
//! (`scripts/install.sh` compiles them).

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(dir) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: gen-fortran DIR   (writes DIR/mpif.h, DIR/mpi.f90, DIR/mpi_f08.f90, DIR/mpif_glue.c)");
        return ExitCode::from(2);
    };
    let bindings = match mpi_fortran::bindings() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("gen-fortran: {e}");
            return ExitCode::FAILURE;
        }
    };
    let files = [
        ("mpif.h", mpi_fortran::source::mpif_h()),
        ("mpi.f90", mpi_fortran::source::module_mpi(&bindings)),
        ("mpi_f08.f90", mpi_fortran::f08::module_mpi_f08(&bindings)),
        ("mpif_glue.c", mpi_fortran::glue::glue_c(&bindings)),
    ];
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("gen-fortran: cannot create {}: {e}", dir.display());
        return ExitCode::FAILURE;
    }
    for (name, text) in files {
        let path = dir.join(name);
        if let Err(e) = std::fs::write(&path, text) {
            eprintln!("gen-fortran: cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
