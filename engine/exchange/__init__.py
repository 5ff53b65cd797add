"""Order execution against the exchange: the signed Bitget REST client and its rate limiting."""
