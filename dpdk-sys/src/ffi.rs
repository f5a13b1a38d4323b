//! The generated bindings and the shim's functions (src/shim.c).

#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals, dead_code, missing_docs)]
#![allow(clippy::all)]

include!(concat!(env!("OUT_DIR"), "/bindings.rs"));

extern "C" {
    pub fn dn_rx_burst(port: u16, queue: u16, pkts: *mut *mut rte_mbuf, n: u16) -> u16;
    pub fn dn_tx_burst(port: u16, queue: u16, pkts: *mut *mut rte_mbuf, n: u16) -> u16;
    pub fn dn_pktmbuf_alloc(pool: *mut rte_mempool) -> *mut rte_mbuf;
    pub fn dn_pktmbuf_free(m: *mut rte_mbuf);
    pub fn dn_pktmbuf_data(m: *mut rte_mbuf, len: *mut u16) -> *mut std::ffi::c_void;
    pub fn dn_pktmbuf_pkt_len(m: *const rte_mbuf) -> u32;
    pub fn dn_pktmbuf_nb_segs(m: *const rte_mbuf) -> u16;
    pub fn dn_pktmbuf_append(m: *mut rte_mbuf, len: u16) -> *mut std::ffi::c_char;
    pub fn dn_pktmbuf_tailroom(m: *const rte_mbuf) -> u16;
    pub fn dn_errno() -> i32;
    pub fn dn_tsc() -> u64;
}
