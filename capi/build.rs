//! The shared library's soname carries the ABI's major version
//! (`libmpi_abi.so.1`), as the MPI ABI chapter names it.
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libmpi_abi.so.1");
}
