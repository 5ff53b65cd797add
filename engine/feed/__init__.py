"""Bitget public market data: parsing, live websocket feed, recording and replay."""
