//! Print `mpi.h` (the MPI standard ABI header) generated from
//! `abi-def/src/lib.rs`: `cargo run -p capi --bin gen-mpi-h > capi/include/mpi.h`.

fn main() {
    print!("{}", mpi_abi::abi::header());
}
