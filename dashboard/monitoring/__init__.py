"""What the console tells machines: health probes, Prometheus metrics, the eviction guard."""
