"""The cluster page: nodes, where each queue lives, and who sweeps lapsed leases."""
