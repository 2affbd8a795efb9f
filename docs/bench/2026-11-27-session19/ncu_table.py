import csv,sys,collections
rows=[r for r in csv.reader(open(sys.argv[1])) if len(r)>10]
h=rows[0]; ki=h.index('Kernel Name'); mi=h.index('Metric Name'); vi=h.index('Metric Value'); ii=h.index('ID')
d=collections.OrderedDict()
for r in rows[1:]:
    d.setdefault((r[ii],r[ki][:40]),{})[r[mi]]=r[vi]
for (i,k),m in d.items():
    print(f"{i:>4} {k:40s} {m.get('gpu__time_duration.sum','?'):>10} ns dram {m.get('dram__throughput.avg.pct_of_peak_sustained_elapsed','?'):>6} sm {m.get('sm__throughput.avg.pct_of_peak_sustained_elapsed','?'):>6} inst {m.get('smsp__inst_executed.sum','?')} occ {m.get('sm__warps_active.avg.pct_of_peak_sustained_active','?')}")
