package io.lakestats.spark;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import javax.net.ssl.SSLSocketFactory;

/**
 * One kept-alive HTTP/1.1 connection to the lakestats service, used by one question at a time:
 * the request is written to the socket and the answer read from it later, by the same thread,
 * with no thread in between. A question sent ahead costs the planner one write; its answer
 * waits in the socket's buffer until the rule after push-down reads it. (Java's {@code
 * HttpClient} hands every request and answer between its own threads: on a busy driver with
 * two cores those hand-offs took longer than the service's whole answer.)
 */
final class ServiceConnection implements Closeable {
  /** An answer: the HTTP status and its body. */
  record Answer(int status, byte[] body) {}

  private final Socket socket;
  private final OutputStream out;
  private final InputStream in;
  private final String host;
  /** When the connection last finished an answer (an idle one the server may have closed). */
  long idleSince;
  /** Whether it has answered before: a failure on its first question is not staleness. */
  boolean reused;

  private ServiceConnection(Socket socket, String host) throws IOException {
    this.socket = socket;
    this.out = socket.getOutputStream();
    this.in = new BufferedInputStream(socket.getInputStream(), 8192);
    this.host = host;
  }

  /** A new connection to the service at {@code url} ({@code http} or {@code https}). */
  static ServiceConnection open(URI url, int timeoutMillis) throws IOException {
    boolean tls = "https".equalsIgnoreCase(url.getScheme());
    int port = url.getPort() >= 0 ? url.getPort() : tls ? 443 : 80;
    Socket socket = tls ? SSLSocketFactory.getDefault().createSocket() : new Socket();
    try {
      socket.setTcpNoDelay(true);
      socket.connect(new InetSocketAddress(url.getHost(), port), timeoutMillis);
      return new ServiceConnection(socket, url.getHost() + ":" + port);
    } catch (IOException | RuntimeException e) {
      socket.close();
      throw e;
    }
  }

  /** Writes a POST of {@code body} (JSON) to {@code path}; the answer is read by {@link #read}. */
  void send(String path, byte[] body, String token) throws IOException {
    StringBuilder head = new StringBuilder(256)
        .append("POST ").append(path).append(" HTTP/1.1\r\nHost: ").append(host)
        .append("\r\nContent-Type: application/json\r\nContent-Length: ").append(body.length)
        .append("\r\n");
    if (token != null && !token.isEmpty()) {
      head.append("Authorization: Bearer ").append(token).append("\r\n");
    }
    byte[] headBytes = head.append("\r\n").toString().getBytes(StandardCharsets.UTF_8);
    byte[] request = new byte[headBytes.length + body.length];
    System.arraycopy(headBytes, 0, request, 0, headBytes.length);
    System.arraycopy(body, 0, request, headBytes.length, body.length);
    out.write(request);
    out.flush();
  }

  /**
   * The answer to the question sent, waiting at most {@code timeoutMillis}; whether the
   * connection can be kept is {@link #keep}. EOFException: closed before the answer began.
   */
  Answer read(int timeoutMillis) throws IOException {
    socket.setSoTimeout(Math.max(1, timeoutMillis));
    String status = line(true);
    String[] parts = status.split(" ", 3);
    if (parts.length < 2 || !parts[0].startsWith("HTTP/1.")) {
      throw new IOException("not an HTTP answer: " + status);
    }
    int code = Integer.parseInt(parts[1]);
    long length = -1;
    boolean chunked = false;
    keep = parts[0].equals("HTTP/1.1");
    for (String header = line(false); !header.isEmpty(); header = line(false)) {
      int colon = header.indexOf(':');
      if (colon <= 0) {
        continue;
      }
      String name = header.substring(0, colon).trim().toLowerCase(Locale.ROOT);
      String value = header.substring(colon + 1).trim().toLowerCase(Locale.ROOT);
      if (name.equals("content-length")) {
        length = Long.parseLong(value);
      } else if (name.equals("transfer-encoding")) {
        chunked = value.contains("chunked");
      } else if (name.equals("connection")) {
        keep = keep ? !value.contains("close") : value.contains("keep-alive");
      }
    }
    byte[] body;
    if (chunked) {
      ByteArrayOutputStream all = new ByteArrayOutputStream();
      for (long size = chunk(); size > 0; size = chunk()) {
        all.write(exactly(size));
        line(false);
      }
      for (String trailer = line(false); !trailer.isEmpty(); trailer = line(false)) {
        // trailers: none are read
      }
      body = all.toByteArray();
    } else if (length >= 0) {
      body = exactly(length);
    } else {
      body = in.readAllBytes(); // the answer ends with the connection
      keep = false;
    }
    reused = true;
    idleSince = System.currentTimeMillis();
    return new Answer(code, body);
  }

  /** Whether the last answer left the connection open for another question. */
  boolean keep;

  private long chunk() throws IOException {
    String size = line(false);
    int semicolon = size.indexOf(';');
    return Long.parseLong((semicolon >= 0 ? size.substring(0, semicolon) : size).trim(), 16);
  }

  private byte[] exactly(long length) throws IOException {
    if (length > 16 << 20) {
      throw new IOException("an answer of " + length + " bytes");
    }
    byte[] body = in.readNBytes((int) length);
    if (body.length != length) {
      throw new EOFException("the answer ended early");
    }
    return body;
  }

  /** One header line without its CRLF; {@code first}: EOF before it is an EOFException. */
  private String line(boolean first) throws IOException {
    StringBuilder text = new StringBuilder(64);
    for (int b = in.read(); ; b = in.read()) {
      if (b < 0) {
        if (first && text.length() == 0) {
          throw new EOFException("the connection was closed");
        }
        throw new EOFException("the answer ended early");
      }
      if (b == '\n') {
        int end = text.length();
        return end > 0 && text.charAt(end - 1) == '\r' ? text.substring(0, end - 1)
            : text.toString();
      }
      if (text.length() > 16_384) {
        throw new IOException("a header line too long");
      }
      text.append((char) b);
    }
  }

  @Override
  public void close() {
    try {
      socket.close();
    } catch (IOException e) {
      // closing: nothing left to do
    }
  }
}
