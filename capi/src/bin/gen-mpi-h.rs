//! Print `mpi.h` (the MPI standard ABI header) generated from
//! `capi/src/abi.rs`: `cargo run -p capi --bin gen-mpi-h > capi/include/mpi.h`.

fn main() {
    print!("{}", mpi_abi::abi::header());
}
