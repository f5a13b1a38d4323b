//! Opening something that is not a DIMMnet-2 slot fails with a clear error.

use driver::{Device, DriverError};

fn temp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("dn-driver-{}-{name}", std::process::id()))
}

#[test]
fn a_missing_device_is_an_open_error() {
    let err = Device::open("/nonexistent/dimmnet0", 0).err().expect("must fail");
    assert!(matches!(err, DriverError::Open { .. }), "{err}");
    assert!(err.to_string().contains("/nonexistent/dimmnet0"));
}

#[test]
fn a_file_without_the_slot_is_refused() {
    let p = temp("small");
    std::fs::write(&p, vec![0u8; 4096]).unwrap();
    let err = Device::open(&p, 0).err().expect("must fail");
    let _ = std::fs::remove_file(&p);
    assert!(err.to_string().contains("slot 0 is not in this device"), "{err}");
}

#[test]
fn memory_without_the_magic_is_not_a_dimmnet() {
    let p = temp("zeros");
    std::fs::write(&p, vec![0u8; fpga_regs::layout::SLOT_STRIDE]).unwrap();
    let err = Device::open(&p, 0).err().expect("must fail");
    let _ = std::fs::remove_file(&p);
    assert!(matches!(err, DriverError::Incompatible { .. }), "{err}");
    assert!(err.to_string().contains("bad magic"), "{err}");
}

#[test]
fn slots_beyond_the_map_are_invalid() {
    let err = Device::open("/dev/null", 99).err().expect("must fail");
    assert!(matches!(err, DriverError::Invalid(_)) || matches!(err, DriverError::Open { .. }), "{err}");
}
