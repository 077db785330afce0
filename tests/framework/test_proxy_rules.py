"""Which proxy a request goes through: Go's ``http.ProxyFromEnvironment`` rules (client-go's),
and the proxy URLs a kubeconfig or the environment may give."""

from __future__ import annotations

import pytest

from kubetrio.runtime.http.proxy import Proxy, proxy_from_environment

PROXY = Proxy(False, "proxy", 3128)


@pytest.mark.parametrize(
    ("url", "no_proxy", "proxied"),
    [
        ("https://api.example.com", "", True),
        ("https://localhost:6443", "", False),  # loopback never goes through the environment's
        ("https://127.0.0.2", "", False),
        ("https://[::1]:6443", "", False),
        ("https://api.example.com", "*", False),
        ("https://api.example.com", "example.com", False),  # a domain and its subdomains
        ("https://example.com", "example.com", False),
        ("https://example.com", ".example.com", True),  # only subdomains
        ("https://api.example.com", ".example.com", False),
        ("https://badexample.com", "example.com", True),
        ("https://api.example.com", "*.example.com", False),
        ("https://API.Example.com", "example.COM", False),
        ("https://api.example.com:6443", "example.com:6443", False),  # a port must match
        ("https://api.example.com:6443", "example.com:443", True),
        ("https://api.example.com", "example.com:443", False),  # the scheme's default port
        ("https://10.1.2.3", "10.0.0.0/8", False),
        ("https://11.1.2.3", "10.0.0.0/8", True),
        ("https://10.1.2.3:6443", "10.1.2.3", False),
        ("https://10.1.2.3:6443", "10.1.2.3:443", True),
        ("https://[fd00::1]:6443", "fd00::/8", False),
        ("https://[fd00::1]:6443", "[fd00::1]:6443", False),
        ("https://10.1.2.3", "api.example.com, , 10.1.2.3", False),
    ],
)
def test_no_proxy(url: str, no_proxy: str, proxied: bool) -> None:
    environ = {"HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": no_proxy}
    assert (proxy_from_environment(url, environ) == PROXY) is proxied


def test_each_scheme_has_its_variable_upper_case_first() -> None:
    environ = {"https_proxy": "http://lower:1", "HTTP_PROXY": "http://upper:2"}
    assert proxy_from_environment("https://api", environ) == Proxy(False, "lower", 1)
    assert proxy_from_environment("http://api", environ) == Proxy(False, "upper", 2)
    environ["HTTPS_PROXY"] = "http://upper:3"
    assert proxy_from_environment("https://api", environ) == Proxy(False, "upper", 3)
    assert proxy_from_environment("https://api", {"HTTPS_PROXY": ""}) is None
    assert proxy_from_environment("http://api", {"HTTPS_PROXY": "http://p"}) is None
    assert proxy_from_environment("https://api", {"NO_PROXY": "x", "no_proxy": "api"}) is None


@pytest.mark.parametrize(
    ("url", "proxy"),
    [
        ("proxy:3128", Proxy(False, "proxy", 3128)),  # no scheme: http://, as in Go
        ("http://proxy", Proxy(False, "proxy", 80)),
        ("https://proxy", Proxy(True, "proxy", 443)),
        ("HTTP://[fd00::1]:8080", Proxy(False, "fd00::1", 8080)),
        ("http://ann:p%40ss@proxy:1", Proxy(False, "proxy", 1, "Basic YW5uOnBAc3M=")),
    ],
)
def test_proxy_urls(url: str, proxy: Proxy) -> None:
    assert Proxy.parse(url) == proxy


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("socks5://proxy:1080", "socks5 proxies are not supported: use an http or https proxy"),
        ("ftp://proxy", "expected http://host[:port] or https://host[:port]"),
        ("http://proxy:99999", "the port is not a number from 0 to 65535"),
    ],
)
def test_unusable_proxy_urls_say_why(url: str, why: str) -> None:
    with pytest.raises(ValueError) as refused:
        Proxy.parse(url)
    assert str(refused.value) == why


def test_a_bad_variable_is_named_but_never_shown() -> None:
    with pytest.raises(ValueError) as refused:
        proxy_from_environment("https://api", {"HTTPS_PROXY": "socks5://u:secret@p"})
    assert str(refused.value) == (
        "HTTPS_PROXY: socks5 proxies are not supported: use an http or https proxy"
    )
    assert str(Proxy.parse("http://u:secret@p:1")) == "http://p:1"
