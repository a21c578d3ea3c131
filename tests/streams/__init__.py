"""Tests of aigateway._streams: SSE decoding, chunk decoding, streams, the chat stream and sockets."""
