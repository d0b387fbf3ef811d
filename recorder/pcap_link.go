package recorder

import (
	"encoding/binary"
	"fmt"
)

// Link types (LINKTYPE_ values, tcpdump.org/linktypes.html) ImportPcap
// decodes. The link headers are parsed here rather than with gopacket's
// layers: 1.1.19 has no decoder for Linux cooked v2 (what `tcpdump -i any`
// writes) and its cooked v1 decoder slices by an address length taken from
// the packet.
const (
	linkNull      = 0   // BSD loopback (lo0): 4-byte address family, host byte order
	linkEthernet  = 1   // Ethernet, also Linux's lo
	linkRawBSD1   = 12  // raw IP, as some BSDs number it
	linkRawBSD2   = 14  // raw IP, as some BSDs number it
	linkRaw       = 101 // raw IPv4 or IPv6
	linkLoop      = 108 // OpenBSD loopback: address family, network byte order
	linkLinuxSLL  = 113 // Linux cooked capture v1 (tcpdump -i any, libpcap < 1.10)
	linkIPv4      = 228
	linkIPv6      = 229
	linkLinuxSLL2 = 276 // Linux cooked capture v2 (tcpdump -i any, libpcap >= 1.10)
)

// linkName names the link types a capture is most likely to have, for
// errors about those that are not supported.
func linkName(lt uint32) string {
	var name string
	switch lt {
	case linkNull:
		name = "BSD loopback"
	case linkEthernet:
		name = "Ethernet"
	case linkRaw, linkRawBSD1, linkRawBSD2:
		name = "raw IP"
	case linkLoop:
		name = "OpenBSD loopback"
	case linkLinuxSLL:
		name = "Linux cooked v1"
	case linkLinuxSLL2:
		name = "Linux cooked v2"
	case linkIPv4:
		name = "raw IPv4"
	case linkIPv6:
		name = "raw IPv6"
	case 6:
		name = "token ring"
	case 9, 50:
		name = "PPP"
	case 51:
		name = "PPPoE"
	case 104:
		name = "Cisco HDLC"
	case 105:
		name = "IEEE 802.11"
	case 117:
		name = "OpenBSD pflog"
	case 119:
		name = "802.11 Prism"
	case 127:
		name = "802.11 radiotap"
	case 192:
		name = "PPI"
	case 220:
		name = "Linux USB"
	case 253:
		name = "Linux netlink"
	default:
		return fmt.Sprint(lt)
	}
	return fmt.Sprintf("%d (%s)", lt, name)
}

// checkLinkType reports an error naming lt unless packets of that link type
// can be decoded.
func checkLinkType(lt uint32) error {
	switch lt {
	case linkNull, linkEthernet, linkRawBSD1, linkRawBSD2, linkRaw, linkLoop, linkLinuxSLL, linkIPv4, linkIPv6, linkLinuxSLL2:
		return nil
	}
	return fmt.Errorf("link type %s is not supported: capture on an Ethernet or loopback interface, or on all of them (tcpdump -i any)", linkName(lt))
}

// EtherTypes of the network layers decoded.
const (
	etherTypeIPv4  = 0x0800
	etherTypeIPv6  = 0x86dd
	etherTypeVLAN  = 0x8100
	etherTypeQinQ  = 0x88a8
	etherTypeQinQ2 = 0x9100
)

// linkPayload returns the IP packet in a frame of link type lt, or nil when
// the frame carries none (ARP, say, or a frame too short to hold its
// header). The error is for an unsupported link type.
func linkPayload(lt uint32, frame []byte) ([]byte, error) {
	switch lt {
	case linkEthernet:
		if len(frame) < 14 {
			return nil, nil
		}
		et, rest := binary.BigEndian.Uint16(frame[12:14]), frame[14:]
		for (et == etherTypeVLAN || et == etherTypeQinQ || et == etherTypeQinQ2) && len(rest) >= 4 {
			et, rest = binary.BigEndian.Uint16(rest[2:4]), rest[4:]
		}
		return ipByEtherType(et, rest), nil
	case linkLinuxSLL:
		if len(frame) < 16 {
			return nil, nil
		}
		return ipByEtherType(binary.BigEndian.Uint16(frame[14:16]), frame[16:]), nil
	case linkLinuxSLL2:
		if len(frame) < 20 {
			return nil, nil
		}
		return ipByEtherType(binary.BigEndian.Uint16(frame[0:2]), frame[20:]), nil
	case linkNull, linkLoop:
		if len(frame) < 4 {
			return nil, nil
		}
		// The family is in the capturing host's byte order for BSD loopback;
		// every family value is below 256, so the order shows.
		family := binary.LittleEndian.Uint32(frame[:4])
		if lt == linkLoop || frame[0] == 0 && frame[1] == 0 {
			family = binary.BigEndian.Uint32(frame[:4])
		}
		switch family {
		case 2, 10, 24, 28, 30: // AF_INET; AF_INET6 on Linux, BSDs, FreeBSD, Darwin
			return frame[4:], nil
		}
		return nil, nil
	case linkRaw, linkRawBSD1, linkRawBSD2, linkIPv4, linkIPv6:
		return frame, nil
	}
	return nil, checkLinkType(lt)
}

func ipByEtherType(et uint16, payload []byte) []byte {
	if et == etherTypeIPv4 || et == etherTypeIPv6 {
		return payload
	}
	return nil
}
