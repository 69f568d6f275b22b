"""A small WebM video for browser tests, made without ffmpeg: Chromium's own VP8 encoder
(WebCodecs) encodes the frames, and this module writes them into a WebM file with a Duration
and Cues (so that a player can seek by Range without reading the whole file).
"""

import struct

ENCODE = """async ([w, h, n, fps]) => {
  const chunks = [];
  const enc = new VideoEncoder({
    output: (c) => { const b = new Uint8Array(c.byteLength); c.copyTo(b); chunks.push([c.timestamp, c.type === 'key', Array.from(b)]); },
    error: (e) => { throw e; },
  });
  enc.configure({ codec: 'vp8', width: w, height: h, bitrate: 4000000, framerate: fps });
  const cv = new OffscreenCanvas(w, h);
  const ctx = cv.getContext('2d');
  const noise = ctx.createImageData(w, h);
  for (let i = 0; i < n; i++) {
    // Noise, so that the file is large enough for a seek to need a range of its own.
    for (let p = 0; p < noise.data.length; p += 65536) { crypto.getRandomValues(noise.data.subarray(p, p + 65536)); }
    ctx.putImageData(noise, 0, 0);
    const f = new VideoFrame(cv, { timestamp: Math.round(i * 1e6 / fps) });
    enc.encode(f, { keyFrame: i % fps === 0 });
    f.close();
  }
  await enc.flush();
  return chunks;
}"""


def _size(n):
    # An 8-byte EBML size, whatever n is: sizes never change an element's length.
    return bytes([0x01]) + n.to_bytes(7, "big")


def _el(eid, data):
    return eid + _size(len(data)) + data


def _uint(eid, v, width=None):
    width = width or max(1, (v.bit_length() + 7) // 8)
    return _el(eid, v.to_bytes(width, "big"))


def webm(page, width=320, height=240, seconds=6, fps=10):
    """Encodes `seconds` of video in `page` (a secure context) and returns the WebM bytes."""
    chunks = page.evaluate(ENCODE, [width, height, seconds * fps, fps])
    header = _el(b"\x1a\x45\xdf\xa3",
                 _uint(b"\x42\x86", 1) + _uint(b"\x42\xf7", 1) + _uint(b"\x42\xf2", 4) + _uint(b"\x42\xf3", 8)
                 + _el(b"\x42\x82", b"webm") + _uint(b"\x42\x87", 2) + _uint(b"\x42\x85", 2))
    info = _el(b"\x15\x49\xa9\x66",
               _uint(b"\x2a\xd7\xb1", 1_000_000) + _el(b"\x4d\x80", b"grids3-test") + _el(b"\x57\x41", b"grids3-test")
               + _el(b"\x44\x89", struct.pack(">d", seconds * 1000.0)))
    tracks = _el(b"\x16\x54\xae\x6b", _el(b"\xae",
                 _uint(b"\xd7", 1) + _uint(b"\x73\xc5", 1) + _uint(b"\x83", 1) + _el(b"\x86", b"V_VP8")
                 + _el(b"\xe0", _uint(b"\xb0", width) + _uint(b"\xba", height))))
    # One cluster per key frame (a second each).
    clusters = []
    for ts, key, data in chunks:
        ms = ts // 1000
        if key or not clusters:
            clusters.append([ms, b""])
        start, body = clusters[-1]
        block = b"\x81" + struct.pack(">h", ms - start) + bytes([0x80 if key else 0x00]) + bytes(data)
        clusters[-1][1] = body + _el(b"\xa3", block)
    cluster_bytes = [_el(b"\x1f\x43\xb6\x75", _uint(b"\xe7", ms, 8) + body) for ms, body in clusters]
    # The Cues come before the clusters; every number in them is 8 bytes, so their length is
    # known before the positions are.
    def cues(positions):
        return _el(b"\x1c\x53\xbb\x6b", b"".join(
            _el(b"\xbb", _uint(b"\xb3", ms, 8) + _el(b"\xb7", _uint(b"\xf7", 1, 8) + _uint(b"\xf1", pos, 8)))
            for (ms, _), pos in zip(clusters, positions)))
    cues_len = len(cues([0] * len(clusters)))
    pos, positions = len(info) + len(tracks) + cues_len, []
    for c in cluster_bytes:
        positions.append(pos)
        pos += len(c)
    segment = _el(b"\x18\x53\x80\x67", info + tracks + cues(positions) + b"".join(cluster_bytes))
    return header + segment
