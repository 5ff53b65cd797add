"""The Bitget venue: endpoints, signing, REST client, public and private websockets, cancel lane."""
