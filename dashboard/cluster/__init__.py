"""The cluster page (issue 6): nodes, where each queue lives, and who sweeps lapsed leases."""
