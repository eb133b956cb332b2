// curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: these typed,
// non-variadic wrappers are the only way the Net module reaches them.
#include <curl/curl.h>

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
