//! AFL++ target: raw words written anywhere in a slot's windows, raw
//! descriptors and doorbell values (`scripts/fuzz.sh raw`).
fn main() {
    afl::fuzz!(|data: &[u8]| dn_fuzz::run(dn_fuzz::Reading::Raw, data));
}
