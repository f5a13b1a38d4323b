/* What bindgen reads: the DPDK APIs the safe wrappers use. */
#include <rte_common.h>
#include <rte_errno.h>
#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_mempool.h>
#include <rte_mbuf.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_bus_vdev.h>
#include <rte_cycles.h>
