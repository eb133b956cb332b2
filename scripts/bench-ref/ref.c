/* The floor of groove-bridge's dependency set, for scripts/bench: one process with the same four
 * libraries doing the same job and nothing else. libcurl (HTTP Basic auth) fetches the Icecast
 * stream into a pipe; libFLAC decodes it (native or Ogg FLAC) on a second thread; PulseAudio's
 * simple API plays it with the bridge's buffer (600 ms, 100 ms requests); a libdbus connection
 * owns a bus name. It does not join at the live edge: it plays Icecast's connect burst as it
 * comes, like the `curl | flac | pacat` chain. Built by scripts/bench into a temporary folder;
 * never installed.
 *
 *   ref URL USER  (the password in GROOVE_PASSWORD; PULSE_SINK picks the sink)
 */
#define _GNU_SOURCE /* F_SETPIPE_SZ */
#include <curl/curl.h>
#include <dbus/dbus.h>
#include <FLAC/stream_decoder.h>
#include <pulse/error.h>
#include <pulse/simple.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The pipe between the two threads holds what the bridge's ring holds. */
#define PIPE_BYTES (512 * 1024)
#define BUFFER_MS 600
#define REQUEST_MS 100

static int pipe_fds[2];

struct player {
    FLAC__StreamDecoder *decoder;
    pa_simple *sink;
    unsigned rate, channels, bits;
    int16_t *pcm;
    size_t pcm_frames;
    /* The first bytes, read to tell Ogg from native FLAC, handed to libFLAC first. */
    unsigned char head[4];
    size_t head_len, head_off;
};

static void die(const char *what, const char *why) {
    fprintf(stderr, "ref: %s: %s\n", what, why);
    exit(1);
}

/* ---- network thread (main): libcurl into the pipe ---- */

static size_t on_body(char *data, size_t size, size_t n, void *user) {
    (void) user;
    size_t len = size * n, off = 0;
    while (off < len) {
        ssize_t w = write(pipe_fds[1], data + off, len - off);
        if (w < 0) {
            if (errno == EINTR) continue;
            return 0; /* the decoder is gone: abort the transfer */
        }
        off += (size_t) w;
    }
    return len;
}

static void fetch(const char *url, const char *user, const char *password) {
    CURL *curl = curl_easy_init();
    if (!curl) die("curl", "cannot start");
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_HTTPAUTH, (long) CURLAUTH_BASIC);
    curl_easy_setopt(curl, CURLOPT_USERNAME, user);
    curl_easy_setopt(curl, CURLOPT_PASSWORD, password);
    curl_easy_setopt(curl, CURLOPT_FAILONERROR, 1L);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    CURLcode rc = curl_easy_perform(curl);
    if (rc != CURLE_OK) fprintf(stderr, "ref: %s: %s\n", url, curl_easy_strerror(rc));
    curl_easy_cleanup(curl);
    close(pipe_fds[1]);
}

/* ---- decoder thread: libFLAC from the pipe, to PulseAudio ---- */

static size_t read_pipe(unsigned char *buf, size_t len) {
    for (;;) {
        ssize_t r = read(pipe_fds[0], buf, len);
        if (r >= 0) return (size_t) r;
        if (errno != EINTR) return 0;
    }
}

static FLAC__StreamDecoderReadStatus on_read(const FLAC__StreamDecoder *d, FLAC__byte *buf, size_t *len, void *user) {
    (void) d;
    struct player *p = user;
    if (p->head_off < p->head_len) {
        size_t n = p->head_len - p->head_off;
        if (n > *len) n = *len;
        memcpy(buf, p->head + p->head_off, n);
        p->head_off += n;
        *len = n;
        return FLAC__STREAM_DECODER_READ_STATUS_CONTINUE;
    }
    *len = read_pipe(buf, *len);
    return *len ? FLAC__STREAM_DECODER_READ_STATUS_CONTINUE : FLAC__STREAM_DECODER_READ_STATUS_END_OF_STREAM;
}

static void open_sink(struct player *p, unsigned rate, unsigned channels) {
    pa_sample_spec spec = {.format = PA_SAMPLE_S16LE, .rate = rate, .channels = (uint8_t) channels};
    size_t frame = 2 * channels;
    pa_buffer_attr attr = {
        .maxlength = (uint32_t) -1,
        .tlength = (uint32_t) (rate * BUFFER_MS / 1000 * frame),
        .prebuf = (uint32_t) -1,
        .minreq = (uint32_t) (rate * REQUEST_MS / 1000 * frame),
        .fragsize = (uint32_t) -1,
    };
    int err = 0;
    p->sink = pa_simple_new(NULL, "groove-bench-ref", PA_STREAM_PLAYBACK, getenv("PULSE_SINK"), "reference", &spec,
                            NULL, &attr, &err);
    if (!p->sink) die("pulseaudio", pa_strerror(err));
    p->rate = rate;
    p->channels = channels;
}

static FLAC__StreamDecoderWriteStatus on_frame(const FLAC__StreamDecoder *d, const FLAC__Frame *f,
                                               const FLAC__int32 *const planes[], void *user) {
    (void) d;
    struct player *p = user;
    unsigned ch = f->header.channels, n = f->header.blocksize, bits = f->header.bits_per_sample;
    if (!p->sink) open_sink(p, f->header.sample_rate, ch);
    if (ch != p->channels || f->header.sample_rate != p->rate) return FLAC__STREAM_DECODER_WRITE_STATUS_ABORT;
    if (p->pcm_frames < n) {
        free(p->pcm);
        p->pcm = malloc((size_t) n * ch * sizeof(int16_t));
        if (!p->pcm) return FLAC__STREAM_DECODER_WRITE_STATUS_ABORT;
        p->pcm_frames = n;
    }
    /* 16-bit out: wider samples are shifted down, as a player without 32-bit output would. */
    int shift = bits > 16 ? (int) bits - 16 : 0;
    for (unsigned i = 0; i < n; i++)
        for (unsigned c = 0; c < ch; c++) p->pcm[i * ch + c] = (int16_t) (planes[c][i] >> shift);
    int err = 0;
    if (pa_simple_write(p->sink, p->pcm, (size_t) n * ch * sizeof(int16_t), &err) < 0) {
        fprintf(stderr, "ref: pulseaudio: %s\n", pa_strerror(err));
        return FLAC__STREAM_DECODER_WRITE_STATUS_ABORT;
    }
    return FLAC__STREAM_DECODER_WRITE_STATUS_CONTINUE;
}

static void on_error(const FLAC__StreamDecoder *d, FLAC__StreamDecoderErrorStatus s, void *user) {
    (void) d, (void) s, (void) user; /* LOST_SYNC when joined mid-stream: libFLAC resyncs */
}

static void *decode(void *arg) {
    struct player *p = arg;
    p->head_len = read_pipe(p->head, sizeof p->head);
    p->decoder = FLAC__stream_decoder_new();
    if (!p->decoder) die("flac", "out of memory");
    FLAC__stream_decoder_set_md5_checking(p->decoder, false);
    int ogg = p->head_len == 4 && memcmp(p->head, "OggS", 4) == 0;
    FLAC__StreamDecoderInitStatus st =
        ogg ? FLAC__stream_decoder_init_ogg_stream(p->decoder, on_read, NULL, NULL, NULL, NULL, on_frame, NULL, on_error, p)
            : FLAC__stream_decoder_init_stream(p->decoder, on_read, NULL, NULL, NULL, NULL, on_frame, NULL, on_error, p);
    if (st != FLAC__STREAM_DECODER_INIT_STATUS_OK) die("flac", "cannot start the decoder");
    FLAC__stream_decoder_process_until_end_of_stream(p->decoder);
    if (p->sink) {
        pa_simple_drain(p->sink, NULL);
        pa_simple_free(p->sink);
    }
    FLAC__stream_decoder_delete(p->decoder);
    close(pipe_fds[0]);
    return NULL;
}

/* ---- the bus name ---- */

static DBusConnection *own_name(void) {
    DBusError e;
    dbus_error_init(&e);
    DBusConnection *bus = dbus_bus_get(DBUS_BUS_SESSION, &e);
    if (!bus) die("dbus", e.message);
    dbus_connection_set_exit_on_disconnect(bus, false);
    char name[64];
    snprintf(name, sizeof name, "org.mpris.MediaPlayer2.groovebenchref.instance%d", (int) getpid());
    if (dbus_bus_request_name(bus, name, DBUS_NAME_FLAG_DO_NOT_QUEUE, &e) < 0) die("dbus", e.message);
    return bus;
}

static void on_term(int sig) {
    (void) sig;
    _exit(0);
}

int main(int argc, char **argv) {
    if (argc != 3) die("usage", "ref URL USER (password in GROOVE_PASSWORD)");
    const char *password = getenv("GROOVE_PASSWORD");
    if (!password) die("GROOVE_PASSWORD", "not set");
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    DBusConnection *bus = own_name();
    if (pipe(pipe_fds) != 0) die("pipe", strerror(errno));
    fcntl(pipe_fds[1], F_SETPIPE_SZ, PIPE_BYTES);
    struct player p = {0};
    pthread_t decoder;
    if (pthread_create(&decoder, NULL, decode, &p) != 0) die("thread", "cannot start the decoder");
    fetch(argv[1], argv[2], password);
    pthread_join(decoder, NULL);
    dbus_connection_unref(bus);
    curl_global_cleanup();
    return 0;
}
