// tc BPF programs (direct-action) that inject the cluster test's faults. This kernel has neither
// act_gact (so no `action drop`) nor sch_netem/sch_fq, so drops and the delay line's redirect are
// done here. Built by the test with clang -target bpf and -D constants:
//   MODE 0: drop every frame (a dead rail)
//   MODE 1: drop IPv4 between addresses A1 and A2, either way (a broken path); others pass
//   MODE 2: redirect frames of at most 512 bytes not yet marked by the delay line into the TAP
//           IFINDEX (delayline.py); marked frames and bulk segments pass
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>

#define SEC(n) __attribute__((section(n), used))
static long (*bpf_redirect)(__u32 ifindex, __u64 flags) = (void *)BPF_FUNC_redirect;

SEC("classifier") int fault(struct __sk_buff *skb) {
#if MODE == 0
  (void)skb;
  return TC_ACT_SHOT;
#elif MODE == 1
  void *data = (void *)(long)skb->data;
  void *end = (void *)(long)skb->data_end;
  struct ethhdr *eth = data;
  if ((void *)(eth + 1) > end || eth->h_proto != __builtin_bswap16(ETH_P_IP)) return TC_ACT_OK;
  struct iphdr *ip = (void *)(eth + 1);
  if ((void *)(ip + 1) > end) return TC_ACT_OK;
  if ((ip->saddr == A1 && ip->daddr == A2) || (ip->saddr == A2 && ip->daddr == A1)) return TC_ACT_SHOT;
  return TC_ACT_OK;
#else
  if (skb->mark == 0x5e1a || skb->len > 512) return TC_ACT_OK;
  return bpf_redirect(IFINDEX, 0);
#endif
}

char _license[] SEC("license") = "GPL";
