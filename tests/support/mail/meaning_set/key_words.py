"""Key words of the meaning set's labelled topics, by language (tests/pure/test_meaning_set_personal.py,
tests/pure/test_meaning_set_hostile.py)."""

from __future__ import annotations

#: Key words of the labelled topics (languages.json, relevant.json), by language: a personal message
#: names none of them, a topic salad many (a word starting so, case aside).
KEY_WORDS = {
    "en": (
        "landlord", "heating", "radiator", "boiler", "rent", "invoice", "overdue", "reminder", "parcel",
        "courier", "refund", "parents' evening", "teacher", "class trip", "school trip", "dentist", "teeth",
        "doctor", "blood", "insurance", "premium", "accident", "crash", "bank card", "interview", "job offer",
        "salary", "employment", "wedding", "rsvp", "gym", "tax", "accountant", "vet", "vaccin", "puppy",
        "roof", "gutter", "leak", "book club", "reading group", "revenue", "removal", "movers", "baggage",
        "suitcase", "outage", "electricity", "deposit",
    ),
    "de": (
        "vermieter", "heizung", "heizkörper", "miete", "rechnung", "mahnung", "zahlungserinnerung", "paket",
        "sendung", "rücksendung", "erstattung", "elternabend", "lehrer", "klassenfahrt", "zahnarzt", "zähne",
        "arzt", "ärztin", "blut", "versicherung", "unfall", "schaden", "bankkarte", "girocard",
        "vorstellungsgespräch", "bewerbung", "arbeitsvertrag", "gehalt", "hochzeit", "fitnessstudio",
        "steuer", "tierarzt", "impf", "dach", "umzug", "koffer", "gepäck", "strom", "verspätung", "kaution",
    ),
    "fr": (
        "propriétaire", "chauffage", "radiateur", "chaudière", "loyer", "facture", "relance", "impayé",
        "colis", "livraison", "rembourse", "retour", "réunion parents", "enseignant", "professeur",
        "maîtresse", "sortie scolaire", "classe verte", "dentiste", "dents", "médecin", "sang", "analyse",
        "assurance", "accident", "sinistre", "carte bancaire", "entretien d'embauche", "candidature",
        "contrat de travail", "salaire", "mariage", "salle de sport", "impôt", "vétérinaire", "vaccin",
        "toit", "fuite", "déménage", "valise", "bagage", "électricité", "retard", "caution", "syndic",
        "copropriété",
    ),
}  # fmt: skip
