//! AFL++ target: structured register-protocol operations driven through the
//! driver into a fresh simulator per input (`scripts/fuzz.sh registers`).
fn main() {
    afl::fuzz!(|data: &[u8]| dn_fuzz::run(dn_fuzz::Reading::Registers, data));
}
