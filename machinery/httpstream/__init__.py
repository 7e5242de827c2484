"""Kubernetes' streaming protocols: upgraded HTTP connections carrying several streams.

``kubectl exec``, ``attach``, ``cp`` and ``port-forward`` upgrade an HTTP
request to a connection that multiplexes streams (stdin, stdout, stderr, an
error stream, a resize stream, or one data and one error stream per forwarded
connection). Kubernetes speaks two transports for them, and so does kubesim
(apimachinery's ``pkg/util/httpstream`` is the model):

- SPDY/3.1 (:mod:`machinery.httpstream.spdy`): ``Upgrade: SPDY/3.1`` with the
  sub-protocol negotiated in ``X-Stream-Protocol-Version`` headers; every
  stream is a SPDY stream whose ``streamType`` header names it;
- WebSocket (:mod:`machinery.httpstream.wsstream`): the ``channel.k8s.io``
  family of sub-protocols, where each message starts with its channel number
  (``v5.channel.k8s.io`` adds a close signal, ``base64.`` variants carry text);
  and SPDY tunnelled in WebSocket binary messages (``SPDY/3.1+portforward.k8s.io``)
  for port-forward from kubectl 1.30 on.

This module holds what both share: the protocol names, the negotiation rule,
the stream types, and :mod:`machinery.httpstream.http1`'s request and response
heads (:mod:`machinery.httpstream.listener` runs the small servers that read
them). Pure values and functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

# --- remote command (exec, attach) -------------------------------------------------------------------

#: The remote-command sub-protocols, newest first (apimachinery's ``util/remotecommand``).
STREAM_PROTOCOL_V1: Final = "channel.k8s.io"
STREAM_PROTOCOL_V2: Final = "v2.channel.k8s.io"
STREAM_PROTOCOL_V3: Final = "v3.channel.k8s.io"
STREAM_PROTOCOL_V4: Final = "v4.channel.k8s.io"
#: WebSocket only: v4 plus the close signal (a ``[255, channel]`` message half-closes a channel).
STREAM_PROTOCOL_V5: Final = "v5.channel.k8s.io"
#: What SPDY negotiates for exec and attach, in the kubelet's order.
SPDY_REMOTE_COMMAND_PROTOCOLS: Final = (STREAM_PROTOCOL_V4, STREAM_PROTOCOL_V3, STREAM_PROTOCOL_V2,
                                        STREAM_PROTOCOL_V1)

#: The port-forward sub-protocol (SPDY).
PORT_FORWARD_PROTOCOL_V1: Final = "portforward.k8s.io"
#: The prefix kubectl puts before a SPDY sub-protocol to tunnel SPDY in WebSocket messages.
SPDY_TUNNELING_PREFIX: Final = "SPDY/3.1+"

HEADER_PROTOCOL_VERSION: Final = "x-stream-protocol-version"
HEADER_ACCEPTED_PROTOCOL_VERSIONS: Final = "x-accepted-stream-protocol-versions"
UPGRADE_SPDY: Final = "SPDY/3.1"

# --- stream headers (core/v1's constants) ------------------------------------------------------------

HEADER_STREAM_TYPE: Final = "streamtype"
HEADER_PORT: Final = "port"
HEADER_REQUEST_ID: Final = "requestid"
STREAM_TYPE_STDIN: Final = "stdin"
STREAM_TYPE_STDOUT: Final = "stdout"
STREAM_TYPE_STDERR: Final = "stderr"
STREAM_TYPE_ERROR: Final = "error"
STREAM_TYPE_RESIZE: Final = "resize"
STREAM_TYPE_DATA: Final = "data"

#: WebSocket channel numbers of the remote-command streams, and the v5 close signal.
CHANNEL_STDIN: Final = 0
CHANNEL_STDOUT: Final = 1
CHANNEL_STDERR: Final = 2
CHANNEL_ERROR: Final = 3
CHANNEL_RESIZE: Final = 4
CHANNEL_CLOSE: Final = 255

#: The reason and cause type a remote command's error Status carries its exit code with.
NON_ZERO_EXIT_CODE_REASON: Final = "NonZeroExitCode"
EXIT_CODE_CAUSE_TYPE: Final = "ExitCode"


def split_protocols(values: Iterable[str]) -> list[str]:
    """Header values as a list of protocols: repeated headers and comma-separated values both count."""
    return [p.strip() for value in values for p in value.split(",") if p.strip()]


def negotiate(client: Sequence[str], server: Sequence[str]) -> str | None:
    """The first protocol the client offers that the server supports (apimachinery's ``negotiateProtocol``)."""
    return next((p for p in client if p in server), None)
