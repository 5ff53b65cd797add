"""Bitget v2 protocol pieces shared by the client and the simulator."""
