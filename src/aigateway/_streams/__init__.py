"""Streamed replies: the SSE decoder, the stream objects, the chat stream's accumulator and WebSocket sockets."""
