// curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: these typed,
// non-variadic wrappers are the only way the Net module reaches them.
#include <curl/curl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

// linux/close_range.h's flag: mark the range close-on-exec instead of closing it.
#define GB_CLOSE_RANGE_CLOEXEC (1U << 2)

typedef size_t (*gb_curl_data_cb)(char *ptr, size_t size, size_t nmemb, void *userdata);
typedef int (*gb_curl_xferinfo_cb)(void *userdata, curl_off_t dltotal, curl_off_t dlnow,
                                   curl_off_t ultotal, curl_off_t ulnow);

static inline CURLcode gb_curl_setopt_long(CURL *h, CURLoption o, long v) {
  return curl_easy_setopt(h, o, v);
}
static inline CURLcode gb_curl_setopt_offset(CURL *h, CURLoption o, curl_off_t v) {
  return curl_easy_setopt(h, o, v);
}
static inline CURLcode gb_curl_setopt_string(CURL *h, CURLoption o, const char *v) {
  return curl_easy_setopt(h, o, v);
}
static inline CURLcode gb_curl_setopt_pointer(CURL *h, CURLoption o, void *v) {
  return curl_easy_setopt(h, o, v);
}
static inline CURLcode gb_curl_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) {
  return curl_easy_setopt(h, o, v);
}
static inline CURLcode gb_curl_setopt_data_cb(CURL *h, CURLoption o, gb_curl_data_cb v) {
  return curl_easy_setopt(h, o, v);
}
static inline CURLcode gb_curl_setopt_xferinfo_cb(CURL *h, gb_curl_xferinfo_cb v) {
  return curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, v);
}
static inline CURLcode gb_curl_getinfo_long(CURL *h, CURLINFO i, long *v) {
  return curl_easy_getinfo(h, i, v);
}
static inline CURLcode gb_curl_getinfo_string(CURL *h, CURLINFO i, char **v) {
  return curl_easy_getinfo(h, i, v);
}
static inline CURLcode gb_curl_getinfo_offset(CURL *h, CURLINFO i, curl_off_t *v) {
  return curl_easy_getinfo(h, i, v);
}
static inline CURLcode gb_curl_getinfo_socket(CURL *h, curl_socket_t *v) {
  return curl_easy_getinfo(h, CURLINFO_ACTIVESOCKET, v);
}

// libcurl opens its sockets without close-on-exec: any child started meanwhile (a browser for
// Raise, the password command, a program a library starts) would hold the connection, an
// Icecast listener slot among them. This opener asks the kernel for SOCK_CLOEXEC atomically.
//
// libcurl 7.88 also makes socketpairs of its own without it (the wakeup pair of the multi
// handle behind each easy handle, the threaded resolver's pair), always before it opens the
// connection's socket. Nothing in this process is meant to be inherited, so the opener then
// marks every fd above 2 close-on-exec (close_range, Linux 5.11; before that they stay as they
// are, and children still get only fds 0–2 from gb_spawn_clean).
static curl_socket_t gb_curl_open_socket_cloexec(void *clientp, curlsocktype purpose,
                                                 struct curl_sockaddr *address) {
  (void)clientp;
  (void)purpose;
  curl_socket_t s = socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
  syscall(SYS_close_range, 3U, ~0U, GB_CLOSE_RANGE_CLOEXEC);
  return s;
}
static inline CURLcode gb_curl_open_sockets_cloexec(CURL *h) {
  return curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, gb_curl_open_socket_cloexec);
}
