//! Print `docs/guide/environment.md`, the table of every `DN_*` variable
//! generated from `adi::knobs`:
//! `cargo run -q -p adi --bin gen-env-page > docs/guide/environment.md`.

fn main() {
    print!("{}", adi::knobs::guide_page());
}
