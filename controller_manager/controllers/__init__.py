"""Controllers that keep workload objects' Pods in line with their spec (the replication manager)."""
