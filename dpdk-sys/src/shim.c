/* DPDK's fast path is static inline in its headers (rx/tx bursts, mbuf
 * allocation and data pointers) and rte_errno is a per-lcore variable:
 * bindgen cannot bind either, so these one-line functions make them
 * callable from Rust. Each does exactly what the inline function it names
 * does; nothing else lives here. */
#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_ethdev.h>
#include <rte_cycles.h>

uint16_t dn_rx_burst(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n)
{
    return rte_eth_rx_burst(port, queue, pkts, n);
}

uint16_t dn_tx_burst(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n)
{
    return rte_eth_tx_burst(port, queue, pkts, n);
}

struct rte_mbuf *dn_pktmbuf_alloc(struct rte_mempool *pool)
{
    return rte_pktmbuf_alloc(pool);
}

void dn_pktmbuf_free(struct rte_mbuf *m)
{
    rte_pktmbuf_free(m);
}

/* The first segment's data and its length. */
void *dn_pktmbuf_data(struct rte_mbuf *m, uint16_t *len)
{
    *len = rte_pktmbuf_data_len(m);
    return rte_pktmbuf_mtod(m, void *);
}

uint32_t dn_pktmbuf_pkt_len(const struct rte_mbuf *m)
{
    return rte_pktmbuf_pkt_len(m);
}

uint16_t dn_pktmbuf_nb_segs(const struct rte_mbuf *m)
{
    return m->nb_segs;
}

/* Append len bytes to the packet; NULL when the tailroom is too small. */
char *dn_pktmbuf_append(struct rte_mbuf *m, uint16_t len)
{
    return rte_pktmbuf_append(m, len);
}

uint16_t dn_pktmbuf_tailroom(const struct rte_mbuf *m)
{
    return rte_pktmbuf_tailroom(m);
}

int dn_errno(void)
{
    return rte_errno;
}

uint64_t dn_tsc(void)
{
    return rte_get_tsc_cycles();
}
