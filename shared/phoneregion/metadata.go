package phoneregion

import (
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/resetnotify/resetnotify/shared/notify"
)

// The descriptions of a territory, in the order metadata_gen.go lists them.
const (
	descGeneral = iota
	descFixedLine
	descMobile
	descTollFree
	descPremiumRate
	descSharedCost
	descPersonal
	descVoIP
	descPager
	descUAN
	descVoicemail
	numDescs
)

// desc is one kind of number of a territory: the pattern of its national significant numbers
// (compiled to match whole numbers; nil when there is no such number), their possible lengths
// (empty: those of the general description; -1: none) and, for the general description, the
// lengths of numbers dialled only locally.
type desc struct {
	re                    *regexp.Regexp
	lengths, localLengths []int
}

// territory is a region's (or a non-geographic calling code's) numbering metadata: what the
// library keeps of it to place a number and tell its type, parsed from its record in
// metadata_gen.go and compiled on first use.
type territory struct {
	leadingRE       *regexp.Regexp // the leading digits that place a number here, within a shared calling code
	natPrefixRE     *regexp.Regexp // the national prefix for parsing
	natTransform    string         // the national prefix transform rule ($1 replacement)
	sameMobileFixed bool
	descs           [numDescs]desc
}

// callingCode is a calling code and its regions, the main region first ("001" for a
// non-geographic code).
type callingCode struct {
	cc      int
	regions []string
}

// lazy is a territory parsed and compiled on first use: a Lambda compiles only the
// territories its numbers reach (and Prepare's, at init), never the whole world's.
type lazy struct {
	once sync.Once
	t    territory
}

var (
	// parsedOnce allocates the lazies at the first lookup, so that they are not in the binary.
	parsedOnce                      sync.Once
	parsedTerritories, parsedNonGeo []lazy
)

// metadata is a parsed territory.
type metadata = *territory

// get returns the territory of record i of records, parsing and compiling it the first time.
func get(records []string, parsed *[]lazy, i int) metadata {
	parsedOnce.Do(func() {
		parsedTerritories = make([]lazy, len(territories))
		parsedNonGeo = make([]lazy, len(nonGeographic))
	})
	l := &(*parsed)[i]
	l.once.Do(func() { l.t = parseTerritory(records[i]) })
	return &l.t
}

// The fields of a record, in the order infra/phonemeta writes them.
const (
	fieldRegion = iota
	fieldCallingCode
	fieldLeading
	fieldNatPrefix
	fieldNatTransform
	fieldSameMobileFixed
	fieldDescs
	numFields = fieldDescs + 3*numDescs
)

// parseTerritory parses and compiles a record of metadata_gen.go. A record that does not
// parse is a broken generator, caught by every test run.
func parseTerritory(record string) territory {
	f := strings.Split(record, ";")
	if len(f) != numFields {
		panic("phoneregion: a record of " + strconv.Itoa(len(f)) + " fields: " + f[0])
	}
	t := territory{natTransform: f[fieldNatTransform], sameMobileFixed: f[fieldSameMobileFixed] == "1"}
	if f[fieldLeading] != "" {
		t.leadingRE = regexp.MustCompile("^(?:" + f[fieldLeading] + ")")
	}
	if f[fieldNatPrefix] != "" {
		t.natPrefixRE = regexp.MustCompile("^(?:" + f[fieldNatPrefix] + ")")
	}
	for i := range t.descs {
		pattern, lengths, local := f[fieldDescs+3*i], f[fieldDescs+3*i+1], f[fieldDescs+3*i+2]
		if pattern != "" {
			t.descs[i].re = regexp.MustCompile("^(?:" + pattern + ")$")
		}
		t.descs[i].lengths, t.descs[i].localLengths = parseLengths(lengths), parseLengths(local)
	}
	return t
}

// parseLengths parses a comma-separated list of lengths.
func parseLengths(s string) []int {
	if s == "" {
		return nil
	}
	var out []int
	for _, l := range strings.Split(s, ",") {
		n, err := strconv.Atoi(l)
		if err != nil {
			panic("phoneregion: a length " + l)
		}
		out = append(out, n)
	}
	return out
}

// field returns field n of record.
func field(record string, n int) string {
	for range n {
		_, record, _ = strings.Cut(record, ";")
	}
	f, _, _ := strings.Cut(record, ";")
	return f
}

// territoryIndex returns the index in territories of region ("US").
func territoryIndex(region string) (int, bool) {
	i := sort.Search(len(territories), func(i int) bool { return field(territories[i], fieldRegion) >= region })
	return i, i < len(territories) && field(territories[i], fieldRegion) == region
}

// regionMetadata returns the metadata of region ("US"), or false when there is none.
func regionMetadata(region string) (metadata, bool) {
	i, ok := territoryIndex(region)
	if !ok {
		return nil, false
	}
	return get(territories[:], &parsedTerritories, i), true
}

// nonGeographicMetadata returns the metadata of the non-geographic calling code cc.
func nonGeographicMetadata(cc int) (metadata, bool) {
	code := func(i int) int {
		n, _ := strconv.Atoi(field(nonGeographic[i], fieldCallingCode))
		return n
	}
	i := sort.Search(len(nonGeographic), func(i int) bool { return code(i) >= cc })
	if i == len(nonGeographic) || code(i) != cc {
		return nil, false
	}
	return get(nonGeographic[:], &parsedNonGeo, i), true
}

// regionsOf returns the regions of calling code cc, the main one first; nil when cc is none.
func regionsOf(cc int) []string {
	i := sort.Search(len(callingCodes), func(i int) bool { return callingCodes[i].cc >= cc })
	if i == len(callingCodes) || callingCodes[i].cc != cc {
		return nil
	}
	return callingCodes[i].regions
}

// nonGeoRegion is the library's region code of the non-geographic calling codes.
const nonGeoRegion = "001"

// metadataFor returns the metadata of region within calling code cc.
func metadataFor(cc int, region string) (metadata, bool) {
	if region == nonGeoRegion {
		return nonGeographicMetadata(cc)
	}
	return regionMetadata(region)
}

// place returns the canonical E.164 form ("" when e164 does not parse), the region ("US",
// "001" or "" for none) and type of the E.164 number e164,
// as the library's Parse(e164, ""), GetRegionCodeForNumber and GetNumberType answer them. Only
// a '+' and digits are read: anything else is in no region.
func place(e164 string) (string, string, notify.NumberType) {
	cc, nsn, ok := parse(e164)
	if !ok {
		return "", "", notify.NumberUnknown
	}
	number := "+" + strconv.Itoa(cc) + nsn
	region := regionOf(cc, nsn)
	if region == "" {
		return number, "", notify.NumberUnknown
	}
	m, ok := metadataFor(cc, region)
	if !ok {
		return number, region, notify.NumberUnknown
	}
	return number, region, m.typeOf(nsn)
}

// Library limits (MIN_LENGTH_FOR_NSN, MAX_LENGTH_FOR_NSN, MAX_LENGTH_COUNTRY_CODE).
const (
	minNSN = 2
	maxNSN = 17
	maxCC  = 3
)

// parse splits e164 into its calling code and national significant number, stripping a
// national prefix the way the library's parser does when what is left has a possible length.
func parse(e164 string) (cc int, nsn string, ok bool) {
	if len(e164) < 2 || e164[0] != '+' || len(e164) > 250 {
		return 0, "", false
	}
	digits := e164[1:]
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, "", false
		}
	}
	if len(digits) <= minNSN || digits[0] == '0' {
		return 0, "", false
	}
	var regions []string
	for i := 1; i <= maxCC && i <= len(digits); i++ {
		n := 0
		for _, d := range digits[:i] {
			n = n*10 + int(d-'0')
		}
		if regions = regionsOf(n); regions != nil {
			cc, nsn = n, digits[i:]
			break
		}
	}
	if regions == nil || len(nsn) < minNSN {
		return 0, "", false
	}
	if m, ok := metadataFor(cc, regions[0]); ok {
		if stripped, ok := m.stripNationalPrefix(nsn); ok && m.lengthAllowsStripping(stripped) {
			nsn = stripped
		}
	}
	if len(nsn) < minNSN || len(nsn) > maxNSN {
		return 0, "", false
	}
	return cc, nsn, true
}

// regionOf is the library's GetRegionCodeForNumber: the only region of cc, or the first whose
// leading digits match nsn, or (for a region without leading digits) where nsn is valid.
func regionOf(cc int, nsn string) string {
	regions := regionsOf(cc)
	if len(regions) == 1 {
		return regions[0]
	}
	for _, r := range regions {
		m, ok := regionMetadata(r)
		if !ok {
			continue
		}
		if m.leadingRE != nil {
			if m.leadingRE.MatchString(nsn) {
				return r
			}
		} else if m.typeOf(nsn) != notify.NumberUnknown {
			return r
		}
	}
	return ""
}

// stripNationalPrefix is the library's maybeStripNationalPrefixAndCarrierCode: nsn without
// its national prefix (transformed when the territory says so), and whether it stripped one.
func (m *territory) stripNationalPrefix(nsn string) (string, bool) {
	if m.natPrefixRE == nil || nsn == "" {
		return nsn, false
	}
	groups := m.natPrefixRE.FindStringSubmatchIndex(nsn)
	if groups == nil {
		return nsn, false
	}
	general := m.descs[descGeneral].re
	valid := func(s string) bool { return general != nil && general.MatchString(s) }
	viable := valid(nsn)
	numGroups := len(groups)/2 - 1
	if m.natTransform == "" || groups[numGroups*2] < 0 {
		if viable && !valid(nsn[groups[1]:]) {
			return nsn, false
		}
		return nsn[groups[1]:], true
	}
	transformed := m.natPrefixRE.ReplaceAllString(nsn, m.natTransform)
	if viable && !valid(transformed) {
		return nsn, false
	}
	return transformed, true
}

// lengthAllowsStripping is the library's test on a number stripped of its national prefix:
// its length is possible for the territory, or too long (not too short, local only or
// between the possible lengths).
func (m *territory) lengthAllowsStripping(nsn string) bool {
	general := m.descs[descGeneral]
	if len(general.lengths) == 0 || general.lengths[0] == -1 {
		return false
	}
	n := len(nsn)
	if slices.Contains(general.localLengths, n) {
		return false
	}
	return n > general.lengths[len(general.lengths)-1] || slices.Contains(general.lengths, n)
}

// typeOf is the library's getNumberTypeHelper.
func (m *territory) typeOf(nsn string) notify.NumberType {
	if !m.matches(nsn, descGeneral) {
		return notify.NumberUnknown
	}
	for _, c := range []struct {
		desc int
		kind notify.NumberType
	}{
		{descPremiumRate, notify.NumberPremiumRate}, {descTollFree, notify.NumberTollFree},
		{descSharedCost, notify.NumberSharedCost}, {descVoIP, notify.NumberVoIP},
		{descPersonal, notify.NumberPersonal}, {descPager, notify.NumberPager},
		{descUAN, notify.NumberUAN}, {descVoicemail, notify.NumberVoicemail},
	} {
		if m.matches(nsn, c.desc) {
			return c.kind
		}
	}
	if m.matches(nsn, descFixedLine) {
		if m.sameMobileFixed || m.matches(nsn, descMobile) {
			return notify.NumberFixedLineOrMobile
		}
		return notify.NumberFixedLine
	}
	if !m.sameMobileFixed && m.matches(nsn, descMobile) {
		return notify.NumberMobile
	}
	return notify.NumberUnknown
}

// matches is the library's isNumberMatchingDesc: nsn has one of the description's lengths
// (when it lists any) and matches its pattern.
func (m *territory) matches(nsn string, i int) bool {
	d := m.descs[i]
	if len(d.lengths) > 0 && !slices.Contains(d.lengths, len(nsn)) {
		return false
	}
	return d.re != nil && d.re.MatchString(nsn)
}
