package obs

// The conversion metrics. Dispatch counts each send it records and each prefix it blocks;
// intake counts each conversion. Both by DimCountry and by Function alone, so the dashboard
// shows conversion per country and the alarm reads the overall share.
const (
	// MetricConversionSends counts messages the provider accepted, as dispatch recorded them.
	MetricConversionSends = "ConversionSends"
	// MetricConversions counts conversions reported through the API.
	MetricConversions = "Conversions"
	// MetricPrefixBlocks counts prefixes blocked for low conversion (by Function alone).
	MetricPrefixBlocks = "PrefixBlocks"
	// MetricConversionErrors counts failed updates of the conversion counters or of the
	// cached block list; they never fail a send, a conversion or an admission.
	MetricConversionErrors = "ConversionCounterErrors"
	// DimCountry is the number's country (the record's country: a calling code, never more
	// of a number).
	DimCountry = "Country"
)

// Conversion records one send or conversion (name is MetricConversionSends or
// MetricConversions) of country, by country and by Function alone.
func (m *Metrics) Conversion(name, country string) {
	m.EmitRollup(map[string]string{DimCountry: country}, [][]string{{}}, Metric{Name: name, Unit: UnitCount, Value: 1})
}
