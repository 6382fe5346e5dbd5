package inputjson

// DecodeFast and DecodeValidated are Decode's two paths, for the tests of
// package inputjson_test, which compare them on generated decl packages
// (which import this one).
func DecodeFast[T any](d *Decoder[T], data []byte) (T, bool) { return d.decodeFast(data) }

func DecodeValidated[T any](d *Decoder[T], data []byte) (T, error) { return d.decodeValidated(data) }
